internal import ShareSync

extension PipeWireCapturer {
    /// Throws once the desktop ended the cast or PipeWire lost the stream.
    /// GNOME ends a monitor's cast when its monitors change (a resolution,
    /// a rotation, a monitor plugged in): then the same source is cast
    /// again, at its new size, and capture goes on.
    func checkEnded() throws(ScreenCastError) {
        if let ended { throw ended }
        if session.closed() {
            if backend == .gnome, let gnome = session as? MutterScreenCast, gnome.monitorsChanged(within: Self.reconfiguration) {
                do {
                    try followDisplayChange()
                    return
                } catch {
                    ended = .ended("the desktop's monitors changed and \(source) could not be cast again: \(error)")
                    throw error
                }
            }
            ended = .ended("the screen cast was stopped by the desktop (\(backend == .gnome ? "GNOME" : "the portal") closed the session)")
        } else if stream.locked({ $0.state }) == .ended {
            ended = .ended("the screen cast's PipeWire stream ended (the shared source went away)")
        }
        if let ended { throw ended }
    }

    /// How long after a cast closed the news that the monitors changed may come.
    static let reconfiguration = Duration.seconds(1)

    /// Casts the same source again after the desktop reconfigured its
    /// monitors; the next picture comes at the new size, which the capture
    /// loop follows as it follows any size change.
    private func followDisplayChange() throws(ScreenCastError) {
        deliveredBefore += Int(stream.locked { $0.counts.arrived })
        session.stop()
        (session, stream) = try Self.open(backend, source: source, cursor: cursor, maxFPS: maxFPS, askAgain: false)
        // The new size comes with its first picture (`capture` follows it).
        _ = try awaitFormat()
        reopened += 1
        pictureKept = false
    }
}
