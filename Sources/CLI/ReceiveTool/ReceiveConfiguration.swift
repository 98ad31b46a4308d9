import Foundation
import ShareCommands
import ShareHandshake
import ShareReceiver
import ShareSRTP
import ShareWire

extension ReceiveOptions {
    /// The receiver these options ask for; a bad option or SDP ends the
    /// program with what is wrong with it, before anything is opened.
    func receiverConfiguration() -> ReceiverConfiguration {
        if session.sdp != nil && session.keyFile != nil {
            fail("--sdp describes another tool's stream, which cannot handshake: not with --key-file")
        }
        let description = sessionDescription()
        var configuration: ReceiverConfiguration
        if let keying = staticKey(from: description) {
            configuration = ReceiverConfiguration(keying: keying)
        } else {
            do {
                configuration = ReceiverConfiguration(keying: try Keying.resolve(keyFile: session.keyFile, srtpKeyFile: nil, name: session.name))
            } catch {
                fail("\(error)")
            }
            configuration.confirmation = session.accept ? .acceptNew : .ask(ConfirmationPrompt.ask)
            configuration.handshakeName = session.name
        }
        configuration.port = session.port ?? description?.video?.port ?? 5004
        configuration.display = show.display
        configuration.showWindow = !show.noWindow && (show.display != nil || !(ProcessInfo.processInfo.environment["DISPLAY"] ?? "").isEmpty)
        configuration.recordPath = show.record
        configuration.playAudio = !show.noAudio
        configuration.decodesSlicesEarly = !show.wholeFrames
        if let description { take(description, into: &configuration) }
        return configuration
    }

    /// The SDP of `--sdp`, checked: readable by this user alone when it
    /// holds a key, and with an H.264 video stream.
    private func sessionDescription() -> SessionDescription? {
        guard let sdp = session.sdp else { return nil }
        guard let text = readTextFile(sdp) else { fail("cannot use SDP \(sdp): no such readable text file") }
        let description: SessionDescription
        do {
            description = try SessionDescription(parsing: text)
            // An SDP with a key is a key file: others must not read it.
            if description.media.contains(where: { $0.crypto != nil }) {
                try KeyFile.refuseIfReadableByOthers(sdp, what: "SDP (it holds an SRTP key)")
            }
        } catch {
            fail("cannot use SDP \(sdp): \(error)")
        }
        guard let video = description.video else { fail("SDP \(sdp) has no video stream") }
        guard video.codec.uppercased() == "H264" else { fail("SDP \(sdp): video codec \(video.codec) is not H264") }
        return description
    }

    /// The static key: `--srtp-key-file`, else the SDP's first `a=crypto`
    /// line; nil for a handshake.
    private func staticKey(from description: SessionDescription?) -> SRTPKeyingMaterial? {
        if let srtpKeyFile = session.srtpKeyFile {
            do { return try KeyFile.read(srtpKeyFile) } catch { fail("\(error)") }
        }
        guard let description, let sdp = session.sdp else { return nil }
        guard let crypto = description.media.compactMap(\.crypto).first else {
            fail("SDP \(sdp) has no a=crypto line and no --key-file was given")
        }
        guard let profile = SRTPProfile(name: crypto.suite) else {
            fail("SDP \(sdp): unsupported crypto suite \(crypto.suite) (share takes \(SRTPProfile.allNames))")
        }
        do { return try SRTPKeyingMaterial(profile: profile, inline: crypto.keySalt) } catch { fail("SDP \(sdp): \(error)") }
    }

    /// What the SDP says of the streams: payload types, parameter sets,
    /// the capture-time extension, and the repairs' types (its own, else
    /// share's defaults unless it gives those numbers to something else).
    private func take(_ description: SessionDescription, into configuration: inout ReceiverConfiguration) {
        for audio in description.audio where audio.codec.lowercased() == "opus" {
            configuration.audioPayloadTypes.insert(audio.payloadType)
        }
        guard let video = description.video else { return }
        configuration.videoPayloadType = video.payloadType
        configuration.parameterSets = video.parameterSets
        configuration.captureTimeExtensionID = video.extensionID(AbsoluteCaptureTime.uri).map { UInt8(clamping: $0) }
        let taken = Set(description.media.map(\.payloadType))
        configuration.retransmissionPayloadType = video.retransmission?.payloadType
            ?? (taken.contains(97) ? nil : configuration.retransmissionPayloadType)
        configuration.fecPayloadType = video.forwardErrorCorrection?.payloadType
            ?? (taken.contains(98) ? nil : configuration.fecPayloadType)
    }
}
