import ShareSession
import ShareWire
import Testing
import ShareBase

@Suite("Whether a receiver listens")
struct ReceiverPresenceTests {
    private func at(_ ms: UInt64) -> MonotonicTime { MonotonicTime(nanoseconds: ms * 1_000_000) }

    @Test func joinsOnceLeavesOnceComesBack() {
        var presence = ReceiverPresence(silenceLimit: .seconds(3))
        #expect(presence.poll(now: at(10_000)) == nil)  // never heard: nothing to leave
        #expect(presence.heard(at: at(0)) == .joined)
        #expect(presence.heard(at: at(200)) == nil)
        #expect(presence.poll(now: at(3100)) == nil)
        #expect(presence.poll(now: at(3200)) == .left(reason: "nothing heard from it for 3.0 seconds"))
        #expect(presence.poll(now: at(9000)) == nil)
        #expect(presence.heard(at: at(9100)) == .joined)
        #expect(presence.saidGoodbye(reason: "receiver stopped") == .left(reason: "it said goodbye (receiver stopped)"))
        #expect(presence.saidGoodbye(reason: nil) == nil)
    }
}
