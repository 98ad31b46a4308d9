/// Base64 (RFC 4648 §4, with padding), for SDP's `inline:` keys and
/// `sprop-parameter-sets`. Decoding rejects any character outside the alphabet.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let a = iterator.next() {
            let b = iterator.next()
            let c = iterator.next()
            out.append(alphabet[Int(a >> 2)])
            out.append(alphabet[Int((a & 0x03) << 4 | (b ?? 0) >> 4)])
            out.append(b == nil ? UInt8(ascii: "=") : alphabet[Int((b! & 0x0F) << 2 | (c ?? 0) >> 6)])
            out.append(c == nil ? UInt8(ascii: "=") : alphabet[Int(c! & 0x3F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The decoded bytes, or nil when `text` is not valid padded base64.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        var index = 0
        while index < chars.count {
            var values: [UInt8] = [0, 0, 0, 0]
            var padding = 0
            for k in 0..<4 {
                let char = chars[index + k]
                if char == UInt8(ascii: "=") {
                    // Padding only at the end of the last group, in positions 2 and 3.
                    guard index + 4 == chars.count, k >= 2 else { return nil }
                    padding += 1
                } else {
                    guard padding == 0, let value = sextet(char) else { return nil }
                    values[k] = value
                }
            }
            out.append(values[0] << 2 | values[1] >> 4)
            if padding < 2 { out.append(values[1] << 4 | values[2] >> 2) }
            if padding < 1 { out.append(values[2] << 6 | values[3]) }
            index += 4
        }
        return out
    }

    private static func sextet(_ char: UInt8) -> UInt8? {
        switch char {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): char - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): char - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): char - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
