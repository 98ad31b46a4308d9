// Shares this X display ($DISPLAY) with `share recv --key-file KEY-FILE`
// for SECONDS, or until Ctrl-C:
//     minimal-sender HOST[:PORT] KEY-FILE [SECONDS]
import Foundation
import ShareSender

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    print("usage: minimal-sender HOST[:PORT] KEY-FILE [SECONDS]")
    exit(2)
}
do {
    let address = arguments[1].split(separator: ":")
    var configuration = SenderConfiguration(host: String(address[0]), keying: try .keyFile(arguments[2]))
    configuration.port = address.count > 1 ? Int(address[1]) ?? 5004 : 5004
    let sender = try ScreenSender(configuration: configuration)
    sender.start { event in print(event) }
    // Ctrl-C's default (ending the process) off first, then a source to
    // see it: the other way round, the source can miss it.
    signal(SIGINT, SIG_IGN)
    let interrupted = DispatchSemaphore(value: 0)
    let interrupt = DispatchSource.makeSignalSource(signal: SIGINT)
    interrupt.setEventHandler { interrupted.signal() }
    interrupt.resume()
    _ = interrupted.wait(timeout: arguments.count > 3 ? .now() + (Double(arguments[3]) ?? 10) : .distantFuture)
    sender.stop()  // the receiver is told (RTCP BYE)
    print("sent \(sender.statistics.framesEncoded) frames")
} catch {
    print("minimal-sender: \(error)")
    exit(1)
}
