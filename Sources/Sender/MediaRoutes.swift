internal import ShareTransport

/// Where the sender's datagrams go. By default the one connected socket
/// carries everything (the handshake, RTP and RTCP of every stream), which
/// is what `share recv` takes. An SFU or a standard receiver tells media
/// apart by port: then audio RTP goes to a port of its own, and RTCP, video's
/// or audio's, to a port of its own through a socket connected there (so
/// only that address can answer, and an SFU such as Janus, which sends its
/// PLI to whoever last sent to its RTCP port, finds us).
struct MediaRoutes: Sendable {
    struct Route: Sendable {
        /// RTP's destination when it is not the main socket's peer.
        var media: SocketAddress?
        /// RTCP's own socket; nil sends RTCP with the RTP.
        var control: UDPSocket?
    }

    var video = Route()
    var audio: [Route] = []

    /// The RTCP sockets to read besides the main one, and which stream each serves.
    var controlSockets: [(socket: UDPSocket, stream: Int?)] {
        var sockets: [(UDPSocket, Int?)] = []
        if let control = video.control { sockets.append((control, nil)) }
        for (index, route) in audio.enumerated() {
            if let control = route.control { sockets.append((control, index)) }
        }
        return sockets
    }

    /// The routes a configuration asks for, towards `host`, one per audio
    /// stream; audio stream i (as the streams started) takes the i-th audio ports.
    static func make(host: String, audioStreams: Int, audioPorts: [Int], rtcpPort: Int?,
                     audioRTCPPorts: [Int]) throws(TransportError) -> MediaRoutes {
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
        return routes
    }
}
