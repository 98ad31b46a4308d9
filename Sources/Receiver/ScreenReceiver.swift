internal import ShareBase
import Dispatch
internal import ShareAudio
internal import ShareColor
internal import ShareDecode
internal import ShareSession
internal import ShareTransport
internal import ShareWire
import Synchronization
internal import ShareLatency
#if canImport(Glibc)
internal import Glibc
internal import ShareSync
#endif

/// The embeddable receiver: a network thread receives SRTP, rebuilds frames
/// through the jitter buffer and answers with RTCP (reports, NACK, PLI,
/// congestion feedback); a decode thread, fed through a bounded queue,
/// decodes, shows, plays and records.
public final class ScreenReceiver: Sendable {
    /// The configuration it was made with.
    public let configuration: ReceiverConfiguration
    private let socket: UDPSocket
    /// The session (with its gate) and the decoder, until `start` hands them
    /// to the network and decode threads, each used by one thread from then on.
    private let parts: Locked<Parts?>
    private struct Parts {
        let session: ReceiveSession
        let gate: SessionGate
        let decoder: H264Decoder
    }
    private let shared = ReceiverShared()
    private let failure = Locked<ReceiverError?>(nil)
    private let group = DispatchGroup()
    private let began = Atomic<UInt64>(0)  // MonotonicTime's nanoseconds; 0: not started
    /// Threads still running.
    private let remaining = Atomic<Int>(2)
    /// Bytes asked for the socket's receive buffer.
    static let receiveBuffer = 4 << 20

    /// Makes a receiver: binds the port (IPv6 and IPv4 on one socket where
    /// the kernel allows) and opens the decoder. Nothing is received before
    /// `start`.
    public init(configuration: ReceiverConfiguration) throws(ReceiverError) {
        self.configuration = configuration
        if let problem = configuration.handshakeName.flatMap(PeerName.problem) { throw .configuration(problem) }
        guard (0...65535).contains(configuration.port) else {
            throw .configuration("port \(configuration.port) outside 0-65535 (0 picks a free one)")
        }
        if configuration.showWindow, let problem = PictureWindow.displayProblem(configuration.display) {
            throw .window(problem)
        }
        if let path = configuration.recordPath {
            guard Recorder.Container(path: path) != nil else {
                throw .configuration("cannot record to \"\(path)\": the file must end in .mkv or .mp4")
            }
            if let problem = SessionRecording.directoryProblem(path) {
                throw .configuration("cannot record to \"\(path)\": \(problem)")
            }
        }
        // Dual stack: IPv6 and IPv4 (as mapped addresses) on one socket;
        // IPv4 alone where the kernel has no IPv6.
        if let dual = try? UDPSocket(bindingPort: configuration.port, ipv6: true, receiveBuffer: Self.receiveBuffer) {
            socket = dual
        } else {
            do {
                socket = try UDPSocket(bindingPort: configuration.port, receiveBuffer: Self.receiveBuffer)
            } catch {
                throw .transport(error.description)
            }
        }
        socket.enableArrivalTimestamps()
        port = socket.localPort
        let session: ReceiveSession
        let decoder: H264Decoder
        do {
            var sessionConfiguration = ReceiveSession.Configuration(
                ssrc: UInt32.random(in: 1...UInt32.max), cname: configuration.cname,
                videoPayloadType: configuration.videoPayloadType)
            sessionConfiguration.maximumDelay = configuration.maximumDelay
            sessionConfiguration.retransmissionPayloadType = configuration.retransmissionPayloadType
            sessionConfiguration.fecPayloadType = configuration.fecPayloadType
            sessionConfiguration.earlySlices = configuration.decodesSlicesEarly
            if case .handshake = configuration.keying { sessionConfiguration.searchesRolloverCounters = false }
            // The window draws a pointer sent apart; a recording or a host
            // drawing the pictures itself would show none.
            sessionConfiguration.drawsPointer = configuration.showWindow && configuration.recordPath == nil
                && configuration.onPicture == nil
            // With a handshake the session waits, with throwaway keys, for
            // the first sender's.
            let keys: SRTPSessionKeys = switch configuration.keying {
            case .staticKey(let keying): .symmetric(keying)
            case .handshake: .symmetric(.random(profile: .aes128CmHmacSha1_80))
            }
            session = try ReceiveSession(configuration: sessionConfiguration, keys: keys)
        } catch {
            throw .configuration(error.description)
        }
        do {
            decoder = try H264Decoder(parameterSets: configuration.parameterSets)
        } catch {
            throw .decoder(error.description)
        }
        parts = Locked(Parts(session: session, gate: SessionGate(session: session, keying: configuration.keying,
                                                                          name: configuration.handshakeName),
                             decoder: decoder))
    }

    /// The UDP port actually bound (useful with port 0).
    public let port: Int

    /// Starts receiving; `handler` hears the lifecycle (as does every `events` stream).
    /// A receiver starts once: after `stop`, make another.
    public func start(events handler: @escaping @Sendable (ReceiverEvent) -> Void = { _ in }) {
        guard let parts = parts.withLock({ $0.take() }),
              shared.running.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
        else { return }
        let broadcast = self.broadcast
        let events: @Sendable (ReceiverEvent) -> Void = { event in
            handler(event)
            broadcast.yield(event)
            if case .finished = event { broadcast.finish() }
        }
        began.store(SystemClock.now().nanoseconds, ordering: .relaxed)
        let granted = socket.receiveBufferSize
        shared.stats.withLock { $0.receiveBufferBytes = granted }
        let queue = WorkQueue()
        let network = ReceiverNetworkLoop(socket: socket, session: parts.session, gate: parts.gate, queue: queue,
                                          confirmation: configuration.confirmation, events: events)
        let presenter = Presenter(configuration: configuration, decoder: parts.decoder, queue: queue, network: network,
                                  latencies: shared, events: events)
        let shared = self.shared
        events(.listening(port: port))
        // Linux reports twice what it reserves; under half of what we asked
        // means net.core.rmem_max capped it.
        if granted < Self.receiveBuffer {
            events(.warning("the kernel granted a \(granted >> 10) KiB socket buffer of the \(Self.receiveBuffer >> 10) KiB asked "
                            + "(raise net.core.rmem_max): bursts may overflow it"))
        }
        let networkQueue = DispatchQueue(label: "share.receiver.network", qos: .userInteractive)
        let decodeQueue = DispatchQueue(label: "share.receiver.decode", qos: .userInteractive)
        for queue in [networkQueue, decodeQueue] { queue.setSpecific(key: Self.threadKey, value: ObjectIdentifier(self)) }
        group.enter()
        networkQueue.async { [self] in
            let error = ThreadName.running(as: "share-network") { network.run(shared) }
            end(error, events: events, queue: queue)
        }
        group.enter()
        decodeQueue.async { [self] in
            let error = ThreadName.running(as: "share-decode") { presenter.run(shared) }
            end(error, events: events, queue: queue)
        }
    }

    /// One thread ended: the first to end stops the other; the last one
    /// reports `finished` with the first error.
    private func end(_ error: ReceiverError?, events: @Sendable (ReceiverEvent) -> Void, queue: WorkQueue) {
        failure.withLock { failure in
            if failure == nil, let error { failure = error }
        }
        shared.running.store(false, ordering: .sequentiallyConsistent)
        queue.wake()
        if remaining.subtract(1, ordering: .sequentiallyConsistent).newValue == 0 {
            // Both threads are done with the socket: the port is free for
            // another receiver at once, not when this object goes.
            socket.close()
            events(.finished(failure.withLock { $0 }))
        }
        group.leave()
    }

    /// Stops receiving and finishes the recording.
    public func stop() {
        shared.running.store(false, ordering: .sequentiallyConsistent)
        waitUntilFinished()
    }

    /// Blocks until both threads ended. From an event handler (which runs on
    /// one of them, `.finished` included) it returns at once instead of
    /// waiting for itself.
    public func waitUntilFinished() {
        if DispatchQueue.getSpecific(key: Self.threadKey) == ObjectIdentifier(self) { return }
        group.wait()
    }

    private static let threadKey = DispatchSpecificKey<ObjectIdentifier>()
    private let broadcast = EventBroadcast<ReceiverEvent>()

    /// The events from now on, as an `AsyncSequence` (each call makes a new
    /// stream; any number may be read at once, beside `start`'s handler).
    /// A stream ends after `.finished`; one asked for later ends at once.
    public var events: AsyncStream<ReceiverEvent> { broadcast.stream() }
    /// The error that ended the receiver, if one did.
    public var error: ReceiverError? { failure.withLock { $0 } }

    /// A snapshot of the counters.
    public var statistics: ReceiverStatistics {
        let start = began.load(ordering: .relaxed)
        // Sorted here, on the reader's thread, never on the decode thread's.
        let latencies = (shared.captureToDisplay.summary, shared.lastPacketToDisplay.summary)
        return shared.stats.withLock { s in
            if start != 0 { s.elapsedSeconds = SystemClock.now().since(MonotonicTime(nanoseconds: start)).seconds }
            s.captureToDisplay = latencies.0
            s.lastPacketToDisplay = latencies.1
            return s
        }
    }

    /// SPS and PPS of an access unit (for the recording's extradata).
    static func parameterSets(of accessUnit: [UInt8]) -> [[UInt8]] {
        AnnexB.nalUnits(in: accessUnit).map { Array(accessUnit[$0]) }.filter {
            let type = $0[0] & 0x1F
            return type == H264NALType.sps || type == H264NALType.pps
        }
    }
}
