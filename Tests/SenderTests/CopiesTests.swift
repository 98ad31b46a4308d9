import Foundation
import ShareSender
import ShareTransport
import TestSupport
import Testing

/// One encode to several SFUs (`SenderConfiguration.copies`): every
/// destination gets the same protected packets at its own ports, each
/// destination's keyframe requests are counted as its own, and a dropped
/// destination gets nothing more while the others go on. Real UDP sockets
/// on loopback stand in for the SFUs' ports.
@Suite("Copies of one stream to several destinations", .serialized)
struct CopiesTests {
    /// One destination's ports: video RTP, video RTCP (optional), one audio stream.
    struct Ports {
        let video: UDPSocket
        let control: UDPSocket?
        let audio: UDPSocket

        init(control: Bool) throws {
            video = try UDPSocket(bindingPort: 0)
            self.control = control ? try UDPSocket(bindingPort: 0) : nil
            audio = try UDPSocket(bindingPort: 0)
        }

        var copy: MediaCopy {
            MediaCopy(host: "127.0.0.1", port: video.localPort, rtcpPort: control?.localPort, audioPorts: [audio.localPort])
        }
    }

    /// Every datagram waiting on `socket`, and the address of the last one's sender.
    private func drain(_ socket: UDPSocket) throws -> (datagrams: [[UInt8]], from: SocketAddress?) {
        var buffer = [UInt8](repeating: 0, count: 2048)
        var count = 0
        var datagrams: [[UInt8]] = []
        var from: SocketAddress?
        while let source = try socket.receive(into: &buffer, count: &count, timeoutMilliseconds: 100) {
            datagrams.append(Array(buffer[0..<count]))
            from = source
        }
        return (datagrams, from)
    }

    /// Pushes `frames` changing pictures and their sound (30 a second).
    private func push(_ sender: ScreenSender, frames: Range<Int>) {
        let silence = [Int16](repeating: 0, count: 1600 * 2)
        for frame in frames {
            let pixels = (0..<160 * 96 * 4).map { UInt8(truncatingIfNeeded: $0 &* 3 &+ frame &* 17) }
            _ = pixels.withUnsafeBytes { sender.push(.bgra($0.baseAddress!, stride: 160 * 4), width: 160, height: 96) }
            _ = silence.withUnsafeBufferPointer { sender.push(audio: .int16($0), rate: 48_000, channels: 2, to: .app) }
            Thread.sleep(forTimeInterval: 1.0 / 30)
        }
    }

    @Test func everyDestinationGetsTheSamePacketsAndADroppedOneNoMore() throws {
        let destinations = try [Ports(control: true), Ports(control: true), Ports(control: false)]
        var configuration = SenderConfiguration(host: "127.0.0.1", keying: .random(profile: .aes128CmHmacSha1_80))
        configuration.video = .pushed(VideoSize(width: 160, height: 96))
        configuration.audio = [AudioInput(source: .pushed(.app))]
        configuration.port = destinations[0].video.localPort
        configuration.rtcpPort = destinations[0].control?.localPort
        configuration.audioPorts = [destinations[0].audio.localPort]
        configuration.copies = destinations.dropFirst().map(\.copy)
        (configuration.congestionControl, configuration.retransmissionStream, configuration.forwardErrorCorrection) = (false, false, false)
        let sender = try ScreenSender(configuration: configuration)
        sender.start()
        defer { sender.stop() }
        push(sender, frames: 0..<45)
        let videos = try destinations.map { try drain($0.video).datagrams }
        let audios = try destinations.map { try drain($0.audio).datagrams }
        // The same protected bytes everywhere: one encode, copied.
        #expect(videos[0].count >= 45 && videos.allSatisfy { $0 == videos[0] }, "\(videos.map(\.count))")
        #expect(audios[0].count >= 40 && audios.allSatisfy { $0 == audios[0] }, "\(audios.map(\.count))")

        // The second destination asks for a keyframe on its RTCP port (a plain
        // PLI, answering the sender report that came from ours): counted as its own.
        let reports = try drain(try #require(destinations[1].control))
        let from = try #require(reports.from, "no sender report at the copy's RTCP port")
        // Drained second, the first destination may hold one report more,
        // sent between the two drains (a loaded machine's timing).
        let primaryReports = try drain(try #require(destinations[0].control)).datagrams
        #expect(!reports.datagrams.isEmpty && primaryReports.starts(with: reports.datagrams)
                && primaryReports.count - reports.datagrams.count <= 1, "\(reports.datagrams.count) against \(primaryReports.count)")
        let ssrc = Array(videos[0][0][8..<12])
        let pli: [UInt8] = [0x81, 206, 0, 2, 0, 0, 0, 7] + ssrc
        #expect(destinations[1].control?.send(pli[...], to: from) == true)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(sender.statistics.destinations.map(\.keyframeRequests) == [0, 1, 0], "\(sender.statistics.destinations)")

        // Dropping the second: it gets nothing more; the first and third go on
        // alike. (The keyframe asked for above went to all three before.)
        let keyframe = try destinations.map { try drain($0.video).datagrams }
        #expect(!keyframe[0].isEmpty && keyframe.allSatisfy { $0 == keyframe[0] }, "\(keyframe.map(\.count))")
        #expect(!sender.dropDestination(3))
        #expect(sender.dropDestination(1))
        #expect(!sender.dropDestination(1))
        push(sender, frames: 45..<75)
        let after = try destinations.map { try drain($0.video).datagrams }
        #expect(after[1].isEmpty && after[0].count >= 30 && after[2] == after[0], "\(after.map(\.count))")
        #expect(sender.statistics.destinations.map(\.dropped) == [false, true, false])
    }

    @Test func copiesAreForSFUsWithPortsOfTheirOwn() throws {
        let destination = try Ports(control: true)
        var configuration = SenderConfiguration(host: "127.0.0.1", keying: .random(profile: .aes128CmHmacSha1_80))
        configuration.video = .pushed(VideoSize(width: 160, height: 96))
        configuration.port = destination.video.localPort
        configuration.copies = [MediaCopy(host: "127.0.0.1", port: freeUDPPort(), rtcpPort: nil, audioPorts: [])]
        // No RTCP port of its own at the first destination: refused.
        #expect(throws: SenderError.self) { try ScreenSender(configuration: configuration) }
        configuration.rtcpPort = destination.control?.localPort
        _ = try ScreenSender(configuration: configuration)
        // A copy with one port twice, or too few audio ports, is refused.
        configuration.copies = [MediaCopy(host: "127.0.0.1", port: 40_000, rtcpPort: 40_000, audioPorts: [])]
        #expect(throws: SenderError.self) { try ScreenSender(configuration: configuration) }
        configuration.audio = [AudioInput(source: .pushed(.app))]
        configuration.audioPorts = [destination.audio.localPort]
        configuration.copies = [MediaCopy(host: "127.0.0.1", port: 40_000, rtcpPort: 40_001, audioPorts: [])]
        #expect(throws: SenderError.self) { try ScreenSender(configuration: configuration) }
        // A handshake is with one receiver: no copies.
        configuration.keying = .handshake(.preSharedKey(Array("secret".utf8)), store: nil)
        configuration.copies = [MediaCopy(host: "127.0.0.1", port: 40_000, rtcpPort: 40_001, audioPorts: [40_002])]
        #expect(throws: SenderError.self) { try ScreenSender(configuration: configuration) }
    }

    /// A relay that tells streams apart by SSRC on one port (Janus's remote
    /// publisher): every stream comes there on the SSRC the host chose.
    @Test func chosenSSRCsCarryEveryStreamToOnePort() throws {
        let relay = try Ports(control: true)
        var configuration = SenderConfiguration(host: "127.0.0.1", keying: .random(profile: .aes128CmHmacSha1_80))
        configuration.video = .pushed(VideoSize(width: 160, height: 96))
        configuration.audio = [AudioInput(source: .pushed(.app))]
        configuration.port = relay.video.localPort
        configuration.rtcpPort = relay.control?.localPort
        (configuration.congestionControl, configuration.retransmissionStream, configuration.forwardErrorCorrection) = (false, false, false)
        configuration.ssrcs = ChosenSSRCs(video: 1000, audio: [1010])
        let sender = try ScreenSender(configuration: configuration)
        sender.start()
        defer { sender.stop() }
        push(sender, frames: 0..<30)
        let datagrams = try drain(relay.video).datagrams
        // RTP (payload types below 128 once the marker bit is off) by SSRC.
        let media = datagrams.filter { $0.count > 12 && !(200...204).contains(Int($0[1])) }
        let ssrcs = media.map { UInt32(bigEndian: $0[8..<12].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }) }
        #expect(Set(ssrcs) == [1000, 1010], "\(Set(ssrcs))")
        #expect(ssrcs.filter { $0 == 1000 }.count >= 30 && ssrcs.filter { $0 == 1010 }.count >= 25, "\(ssrcs.count)")
        #expect(try drain(relay.audio).datagrams.isEmpty)
    }

    @Test func chosenSSRCsMustFitTheStreams() throws {
        var configuration = SenderConfiguration(host: "127.0.0.1", keying: .random(profile: .aes128CmHmacSha1_80))
        configuration.video = .pushed(VideoSize(width: 160, height: 96))
        configuration.audio = [AudioInput(source: .pushed(.app))]
        (configuration.congestionControl, configuration.retransmissionStream, configuration.forwardErrorCorrection) = (false, false, false)
        configuration.ssrcs = ChosenSSRCs(video: 1000, audio: [1010])
        _ = try ScreenSender(configuration: configuration)
        for wrong in [ChosenSSRCs(video: 1000, audio: []), ChosenSSRCs(video: 1000, audio: [1000]), ChosenSSRCs(video: 0, audio: [1010])] {
            configuration.ssrcs = wrong
            #expect(throws: SenderError.self, "\(wrong)") { try ScreenSender(configuration: configuration) }
        }
        // Repair streams would need SSRCs of their own; a handshake's receiver chooses nothing.
        configuration.ssrcs = ChosenSSRCs(video: 1000, audio: [1010])
        configuration.retransmissionStream = true
        #expect(throws: SenderError.self) { try ScreenSender(configuration: configuration) }
        configuration.retransmissionStream = false
        configuration.keying = .handshake(.preSharedKey(Array("secret".utf8)), store: nil)
        #expect(throws: SenderError.self) { try ScreenSender(configuration: configuration) }
    }
}
