import ShareBase
import Testing

@Suite struct DataRateTests {
    @Test func aRateIsTheSameInEitherUnit() {
        #expect(Bitrate.kilobitsPerSecond(2500) == .bitsPerSecond(2_500_000))
        #expect(Bitrate.kilobitsPerSecond(2500).kilobitsPerSecond == 2500)
        #expect(Bitrate.kilobitsPerSecond(1.5).bitsPerSecond == 1500)
        #expect("\(Bitrate.bitsPerSecond(1_234_400))" == "1234 kbit/s")
    }

    @Test func ratesAddScaleAndCompare() {
        let video = Bitrate.kilobitsPerSecond(3000), audio = Bitrate.kilobitsPerSecond(112)
        #expect(video + audio == .kilobitsPerSecond(3112))
        #expect(video - audio == .kilobitsPerSecond(2888))
        #expect(video * 0.5 == .kilobitsPerSecond(1500) && 2 * audio == .kilobitsPerSecond(224))
        #expect(video / 4 == .kilobitsPerSecond(750))
        #expect(video / audio > 26 && video / audio < 27)
        #expect(audio < video && max(audio, video) == video)
    }

    /// What a rate carries in a time, and back: the pacer's bucket and the
    /// acknowledged rate's window.
    @Test func aRateOverATimeIsASizeAndBack() {
        let rate = Bitrate.kilobitsPerSecond(2000)
        #expect(rate * .milliseconds(20) == .bytes(5000))
        #expect(rate.bytes(in: .microseconds(3)) == 0.75)
        #expect(ByteCount.bytes(5000) / Duration.milliseconds(20) == rate)
        #expect(ByteCount.bytes(5000) / rate == .milliseconds(20))
        #expect(ByteCount.bytes(5000) / Duration.zero == .zero, "no time: no rate, not infinity")
        #expect(ByteCount.bytes(5000) / Bitrate.zero == .zero)
        var size = ByteCount.bytes(1200)
        size += .bytes(300)
        size -= .bytes(500)
        #expect(size == .bytes(1000) && size.bits == 8000 && "\(size)" == "1000 B")
    }
}
