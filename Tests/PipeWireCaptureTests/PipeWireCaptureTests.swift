import Foundation
@testable import SharePipeWireCapture
import Testing

/// The Wayland capture's parts that need no desktop: D-Bus values as the
/// screen-cast APIs carry them, GNOME's monitor list, the portal's cursor
/// modes and restore tokens. The capture itself runs end to end in
/// `WaylandEndToEndTests`, on a real headless GNOME session.
@Suite("PipeWire capture: D-Bus values, monitors, portal settings")
struct PipeWireCaptureTests {
    @Test func optionsAndVariantsReadBackAsWritten() {
        let options: DBusValue = .dictionary(["cursor-mode": .uint32(2), "window-id": .uint64(1 << 40), "multiple": .bool(false),
                                              "restore_token": .string("a-token"), "handle_token": .string("share_t")])
        let values: [DBusValue] = [.string("Meta-0"), options, .int32(-7), .objectPath("/org/example/Session/u1"),
                                   .variant(.double(2.5))]
        let read = DBusReader.roundTrip(values)
        #expect(read.count == values.count)
        #expect(read.first?.string == "Meta-0")
        // Values in a{sv} come back inside their variants.
        let dictionary = read[1].dictionary ?? [:]
        #expect(dictionary["cursor-mode"]?.uint32 == 2)
        #expect(dictionary["window-id"]?.unwrapped == .uint64(1 << 40))
        #expect(dictionary["multiple"]?.unwrapped == .bool(false))
        #expect(dictionary["restore_token"]?.string == "a-token")
        #expect(read[2] == .int32(-7))
        #expect(read[3] == .objectPath("/org/example/Session/u1"))
        #expect(read[4].unwrapped == .double(2.5))
    }

    @Test func anEmptyDictionaryIsAnEmptyDictionary() {
        #expect(DBusReader.roundTrip([.dictionary([:])]).first?.dictionary == [:])
    }

    /// GetCurrentState's shape, as Mutter 43 gives it for two monitors, the
    /// second primary and to the right.
    @Test func gnomeMonitorsAreReadFromTheDisplayState() throws {
        func mode(_ w: Int32, _ h: Int32, current: Bool) -> DBusValue {
            .structure([.string("\(w)x\(h)@60"), .int32(w), .int32(h), .double(60), .double(1), .array([.double(1)]),
                        .dictionary(current ? ["is-current": .bool(true)] : [:])])
        }
        func monitor(_ connector: String, _ name: String, modes: [DBusValue]) -> DBusValue {
            .structure([.structure([.string(connector), .string("vendor"), .string("product"), .string("serial")]),
                        .array(modes), .dictionary(["display-name": .string(name)])])
        }
        func logical(x: Int32, primary: Bool, _ connector: String) -> DBusValue {
            .structure([.int32(x), .int32(0), .double(1), .uint32(0), .bool(primary),
                        .array([.structure([.string(connector), .string("v"), .string("p"), .string("s")])]), .dictionary([:])])
        }
        let state: [DBusValue] = [
            .uint32(1),
            .array([monitor("Meta-0", "Built-in", modes: [mode(1280, 720, current: true)]),
                    monitor("Meta-1", "Projector", modes: [mode(3840, 2160, current: false), mode(1920, 1080, current: true)])]),
            .array([logical(x: 0, primary: false, "Meta-0"), logical(x: 1280, primary: true, "Meta-1")]),
            .dictionary([:]),
        ]
        let displays = MutterDisplays(monitors: MutterDisplays.parse(state))
        #expect(displays.monitors.count == 2)
        #expect(try displays.primary == "Meta-1")
        #expect(displays.monitors.last == MutterDisplays.Monitor(connector: "Meta-1", name: "Projector", primary: true,
                                                                  x: 1280, y: 0, width: 1920, height: 1080))
        #expect(try displays.connector(named: "Built-in") == "Meta-0")
        #expect(try displays.connector(named: "1") == "Meta-1")
        #expect(throws: ScreenCastError.self) { try displays.connector(named: "HDMI-9") }
        #expect(MutterDisplays.parse([.uint32(1)]).isEmpty, "a reply of another shape gives no monitor, not a trap")
    }

    @Test func thePortalGetsTheCursorModeItOffers() {
        #expect(ScreenCastPortal.cursorMode(.metadata, available: 7) == 4)
        #expect(ScreenCastPortal.cursorMode(.metadata, available: 3) == 2, "drawn in when metadata is not offered")
        #expect(ScreenCastPortal.cursorMode(.embedded, available: 7) == 2)
        #expect(ScreenCastPortal.cursorMode(.hidden, available: 7) == 1)
        #expect(ScreenCastPortal.cursorMode(.metadata, available: 0) == nil, "an old portal: its default")
    }

    @Test func restoreTokensAreKeptPrivatelyUnderTheStateDirectory() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("share-token-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        let store = RestoreTokenStore(environment: ["XDG_STATE_HOME": base, "HOME": "/nonexistent"])
        #expect(store.load(types: 1) == nil)
        store.save("token-one", types: 1)
        store.save("token-window", types: 2)
        #expect(store.load(types: 1) == "token-one")
        #expect(store.load(types: 2) == "token-window")
        store.save("token-two", types: 1)
        #expect(store.load(types: 1) == "token-two", "a new token replaces the old")
        let file = try FileManager.default.attributesOfItem(atPath: "\(base)/share/portal-monitor.token")
        let directory = try FileManager.default.attributesOfItem(atPath: "\(base)/share")
        #expect((file[.posixPermissions] as? Int) == 0o600)
        #expect((directory[.posixPermissions] as? Int) == 0o700)
        #expect(RestoreTokenStore(environment: ["HOME": "/home/someone"]).directory == "/home/someone/.local/state/share")
        #expect(RestoreTokenStore(environment: ["XDG_STATE_HOME": "relative", "HOME": "/h"]).directory == "/h/.local/state/share",
                "a relative XDG_STATE_HOME is ignored, as the spec says")
    }
}
