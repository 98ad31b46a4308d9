// A receiver that draws nothing itself: it takes the decoded pictures and
// writes one PNG a second (picture-1.png, picture-2.png, …), as an
// application that shows the picture its own way would take them, for
// SECONDS or until Ctrl-C:
//     embedded-viewer PORT KEY-FILE OUT-DIRECTORY [SECONDS]
import Foundation
import ShareReceiver

let arguments = CommandLine.arguments
guard arguments.count >= 4, let port = Int(arguments[1]) else {
    print("usage: embedded-viewer PORT KEY-FILE OUT-DIRECTORY [SECONDS]")
    exit(2)
}
let directory = URL(fileURLWithPath: arguments[3])
let seconds = arguments.count > 4 ? Double(arguments[4]) ?? 10 : .greatestFiniteMagnitude

/// Pictures arrive on the receiver's decode thread: take a copy at most once
/// a second and write it on another queue, so decoding never waits on the disk.
final class Snapshots: @unchecked Sendable {
    // Safe: `lastTaken` and `written` are touched only under `lock`.
    private let lock = NSLock()
    private var lastTaken = Date.distantPast
    private var written = 0
    private let writer = DispatchQueue(label: "embedded-viewer.png")

    func offer(_ picture: borrowing ReceivedPicture) {
        let now = Date()
        let number: Int? = lock.withLock {
            guard now.timeIntervalSince(lastTaken) >= 1 else { return nil }
            lastTaken = now
            written += 1
            return written
        }
        guard let number else { return }
        let (width, height, pixels) = (picture.width, picture.height, picture.bgra())
        writer.async {
            let url = directory.appendingPathComponent("picture-\(number).png")
            do {
                try PNG.encode(bgra: pixels, width: width, height: height).write(to: url)
                print("wrote \(url.path) (\(width)x\(height))")
            } catch {
                print("embedded-viewer: cannot write \(url.path): \(error)")
            }
        }
    }

    func finish() { writer.sync {} }
}

let snapshots = Snapshots()
do {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var configuration = ReceiverConfiguration(keying: try .keyFile(arguments[2]))
    configuration.port = port
    configuration.showWindow = false
    configuration.playAudio = false
    configuration.onPicture = { picture in snapshots.offer(picture) }
    let receiver = try ScreenReceiver(configuration: configuration)
    receiver.start { event in print(event) }
    // Ctrl-C's default (ending the process) off first, then a source to
    // see it: the other way round, the source can miss it.
    signal(SIGINT, SIG_IGN)
    let interrupted = DispatchSemaphore(value: 0)
    let interrupt = DispatchSource.makeSignalSource(signal: SIGINT)
    interrupt.setEventHandler { interrupted.signal() }
    interrupt.resume()
    _ = interrupted.wait(timeout: seconds.isFinite && seconds < 1e9 ? .now() + seconds : .distantFuture)
    receiver.stop()
    snapshots.finish()
    print("decoded \(receiver.statistics.framesDecoded) pictures")
} catch {
    print("embedded-viewer: \(error)")
    exit(1)
}
