internal import ShareSRTP
internal import ShareWire
internal import ShareBase

/// The SDP a receiver of the sender's streams needs: H.264
/// packetization-mode 1 with the parameter sets, its RTX repairs (RFC 4588),
/// rtcp-mux, the capture-time extension, the SDES key; one Opus section per
/// audio stream.
enum SenderDescription {
    static func video(configuration: SenderConfiguration, keying: SRTPKeyingMaterial, host: String,
                      parameterSets sets: [[UInt8]], ssrcs: SenderPlan.StreamSSRCs) -> SessionDescription {
        var fmtp: [(String, String)] = [("packetization-mode", "1")]
        if let sps = sets.first(where: { $0.first.map { $0 & 0x1F == 7 } ?? false }), sps.count >= 4 {
            // RFC 6184 §8.1: profile_idc, constraint flags and level_idc from the SPS.
            let hex = sps[1...3].map { byte in
                let digits = Array("0123456789abcdef")
                return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
            }.joined()
            fmtp.append(("profile-level-id", hex))
        }
        if !sets.isEmpty {
            fmtp.append(("sprop-parameter-sets", sets.map { Base64.encode($0) }.joined(separator: ",")))
        }
        var video = MediaDescription(
            kind: .video, port: configuration.port, payloadType: configuration.payloadType, codec: "H264",
            clockRate: 90_000, formatParameters: fmtp,
            crypto: (keying.profile.rawValue, keying.inlineKeySalt()),
            extensions: [(1, AbsoluteCaptureTime.uri)], source: (ssrcs.video, configuration.cname))
        video.feedback = ["nack", "nack pli", "ccm fir"] + (configuration.congestionControl ? ["ack ccfb"] : [])
        video.rtcpPort = configuration.rtcpPort
        video.rtcpMux = configuration.rtcpPort == nil
        if let repairSSRC = ssrcs.retransmission {
            video.retransmission = (configuration.retransmissionPayloadType, repairSSRC)
        }
        if let fecSSRC = ssrcs.forwardErrorCorrection {
            video.forwardErrorCorrection = (configuration.fecPayloadType, fecSSRC)
        }
        return SessionDescription(connectionAddress: host, media: [video])
    }

    /// The audio stream `index` (on its own port when audio has ports of
    /// its own; RTCP muxed unless it has one too).
    static func audio(_ stream: SenderPlan.AudioStream, index: Int, configuration: SenderConfiguration,
                      keying: SRTPKeyingMaterial) -> MediaDescription {
        // RFC 7587 §7: opus/48000/2 always; stereo=1 says what we send.
        var audio = MediaDescription(
            kind: .audio, port: index < configuration.audioPorts.count ? configuration.audioPorts[index] : configuration.port,
            payloadType: configuration.audioPayloadType, codec: "opus", clockRate: 48_000, channels: 2,
            formatParameters: [("minptime", "10"), ("useinbandfec", "1"), ("stereo", stream.channels == 2 ? "1" : "0")],
            crypto: (keying.profile.rawValue, keying.inlineKeySalt()),
            extensions: [(1, AbsoluteCaptureTime.uri)], source: (stream.ssrc, configuration.cname))
        audio.rtcpPort = index < configuration.audioRTCPPorts.count ? configuration.audioRTCPPorts[index] : nil
        audio.rtcpMux = audio.rtcpPort == nil
        return audio
    }
}
