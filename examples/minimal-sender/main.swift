// Shares this X display ($DISPLAY) with `share recv --key-file KEY-FILE`:
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
    Thread.sleep(forTimeInterval: arguments.count > 3 ? Double(arguments[3]) ?? 10 : .greatestFiniteMagnitude)
    sender.stop()
    print("sent \(sender.statistics.framesEncoded) frames")
} catch {
    print("minimal-sender: \(error)")
    exit(1)
}
