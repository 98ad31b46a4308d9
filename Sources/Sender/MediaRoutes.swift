internal import ShareTransport
import Synchronization

/// Where the sender's datagrams go. By default the one connected socket
/// carries everything (the handshake, RTP and RTCP of every stream), which
/// is what `share recv` takes. An SFU or a standard receiver tells media
/// apart by port: then audio RTP goes to a port of its own, and RTCP, video's
/// or audio's, to a port of its own through a socket connected there (so
/// only that address can answer, and an SFU such as Janus, which sends its
/// PLI to whoever last sent to its RTCP port, finds us). Copies (more SFUs)
/// get every packet the first destination gets, at their own ports.
struct MediaRoutes: Sendable {
    struct Route: Sendable {
        /// RTP's destination when it is not the main socket's peer.
        var media: SocketAddress?
        /// RTCP's own socket; nil sends RTCP with the RTP.
        var control: UDPSocket?
    }

    /// One more destination: its video RTP address, its video RTCP route
    /// and one route per audio stream.
    struct Copy: Sendable {
        var video: SocketAddress
        var control = Route()
        var audio: [Route] = []
        let state: DestinationState
    }

    var video = Route()
    var audio: [Route] = []
    /// The first destination (the socket's peer and the routes above).
    let primary = DestinationState()
    var copies: [Copy] = []

    /// Every destination, the first one first (as `ScreenSender.dropDestination` numbers them).
    var destinations: [DestinationState] { [primary] + copies.map(\.state) }

    /// The RTCP sockets to read besides the main one: which stream each
    /// serves, and for which destination.
    var controlSockets: [(socket: UDPSocket, stream: Int?, destination: DestinationState)] {
        var sockets: [(UDPSocket, Int?, DestinationState)] = []
        func add(_ video: Route, _ audio: [Route], _ state: DestinationState) {
            if let control = video.control { sockets.append((control, nil, state)) }
            for (index, route) in audio.enumerated() {
                if let control = route.control { sockets.append((control, index, state)) }
            }
        }
        add(video, audio, primary)
        for copy in copies { add(copy.control, copy.audio, copy.state) }
        return sockets
    }

    /// Sends `bytes` as the pacer releases them: to the socket's peer, and
    /// to each copy's video port (the pacer carries only video when there
    /// are copies: `ScreenSender.checkCopies`).
    func deliver(_ bytes: ArraySlice<UInt8>, on socket: UDPSocket) {
        if primary.isActive { socket.send(bytes) }
        for copy in copies where copy.state.isActive { socket.send(bytes, to: copy.video) }
    }

    /// Sends audio stream `index`'s packet, on a port of its own, to the
    /// first destination and to each copy.
    func deliver(_ bytes: ArraySlice<UInt8>, audio index: Int, on socket: UDPSocket) {
        if primary.isActive, let media = audio[index].media { socket.send(bytes, to: media) }
        for copy in copies where copy.state.isActive { socket.send(bytes, to: copy.audio[index].media) }
    }

    /// Sends one stream's RTCP (`stream` nil: the video's) to each copy
    /// that takes it on a port of its own.
    func sendToCopies(rtcp bytes: ArraySlice<UInt8>, stream: Int?, on socket: UDPSocket) {
        for copy in copies where copy.state.isActive {
            let route = stream.map { copy.audio[$0] } ?? copy.control
            if let control = route.control {
                control.send(bytes)
            } else if let media = route.media {
                socket.send(bytes, to: media)
            }
        }
    }

    /// The routes a configuration asks for, towards `host`, one per audio
    /// stream; audio stream i (as the streams started) takes the i-th audio ports.
    static func make(host: String, audioStreams: Int, audioPorts: [Int], rtcpPort: Int?,
                     audioRTCPPorts: [Int], copies: [MediaCopy] = []) throws(TransportError) -> MediaRoutes {
        var routes = MediaRoutes()
        if let rtcpPort {
            routes.video.control = try UDPSocket(connectedTo: try SocketAddress(host: host, port: rtcpPort))
        }
        for index in 0..<audioStreams {
            var route = Route()
            if index < audioPorts.count { route.media = try SocketAddress(host: host, port: audioPorts[index]) }
            if index < audioRTCPPorts.count {
                route.control = try UDPSocket(connectedTo: try SocketAddress(host: host, port: audioRTCPPorts[index]))
            }
            routes.audio.append(route)
        }
        for copy in copies {
            var made = Copy(video: try SocketAddress(host: copy.host, port: copy.port), state: DestinationState())
            if let rtcpPort = copy.rtcpPort {
                made.control.control = try UDPSocket(connectedTo: try SocketAddress(host: copy.host, port: rtcpPort))
            }
            for index in 0..<audioStreams {
                made.audio.append(Route(media: try SocketAddress(host: copy.host, port: copy.audioPorts[index])))
            }
            routes.copies.append(made)
        }
        return routes
    }
}

/// One destination's state, shared by the threads that send and read:
/// whether it is still sent to, and the keyframe requests it made.
final class DestinationState: Sendable {
    private let active = Atomic<Bool>(true)
    let keyframeRequests = Atomic<Int>(0)

    var isActive: Bool { active.load(ordering: .relaxed) }

    /// Stops sending to it; returns false when it was stopped already.
    func drop() -> Bool { active.exchange(false, ordering: .relaxed) }
}
