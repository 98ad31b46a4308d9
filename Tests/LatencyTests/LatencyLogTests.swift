import Dispatch
import ShareLatency
import Testing

@Suite("Latency percentiles: the recorder, and the log the frame path writes and readers summarize")
struct LatencyLogTests {
    @Test func percentilesAreByNearestRankOverTheKeptWindow() {
        var recorder = LatencyRecorder(capacity: 100)
        #expect(recorder.summary == LatencySummary(samples: 0))
        #expect(recorder.summary.text == "no samples")
        for value in (1...100).reversed() { recorder.record(milliseconds: Double(value)) }
        recorder.record(milliseconds: .nan)
        #expect(recorder.summary == LatencySummary(samples: 100, p50: 50, p95: 95, p99: 99, max: 100))
        // The window keeps the last 100: fifty of 1000 push out the oldest fifty (100 down to 51).
        for _ in 0..<50 { recorder.record(milliseconds: 1000) }
        let summary = recorder.summary
        #expect(summary == LatencySummary(samples: 150, p50: 50, p95: 1000, p99: 1000, max: 1000))
        #expect(recorder.percentile(1) == 1 && recorder.percentile(51) == 1000)
        #expect(summary.text == "50.0 / 1000.0 / 1000.0 ms (p50/p95/p99)")
    }

    @Test func theLogSummarizesWhatTheRecorderWouldAndKeepsRecordingAfterwards() {
        let log = LatencyLog(capacity: 1000)
        var recorder = LatencyRecorder(capacity: 1000)
        var generator = SystemRandomNumberGenerator()
        for n in 0..<2500 {
            let value = Double(UInt16.random(in: 0...40_000, using: &generator)) / 1000
            log.record(milliseconds: value)
            recorder.record(milliseconds: value)
            if n % 400 == 0 { #expect(log.summary == recorder.summary) }
        }
        let before = log.summary
        #expect(before == recorder.summary && before.samples == 2500)
        log.record(milliseconds: 500)
        let after = log.summary
        #expect(after.samples == 2501 && after.max == 500 && before.max != 500, "a summary is a snapshot, not a view")
    }

    /// One thread records as the encode or decode thread does while another
    /// reads summaries as the statistics do: every sample is counted, every
    /// summary is consistent (p50 <= p95 <= p99 <= max), none is torn.
    @Test func recordingAndSummarizingFromTwoThreadsCountsEverySample() async {
        let log = LatencyLog(capacity: 4096)
        let total = 50_000
        let reader = Task.detached { () -> Int in
            var summaries = 0
            while true {
                let s = log.summary
                if let p50 = s.p50, let p95 = s.p95, let p99 = s.p99, let max = s.max {
                    #expect(p50 <= p95 && p95 <= p99 && p99 <= max && max < 10)
                }
                summaries += 1
                if s.samples == total { return summaries }
            }
        }
        DispatchQueue.global().async {
            for n in 0..<total { log.record(milliseconds: Double(n % 1000) / 100) }
        }
        let summaries = await reader.value
        #expect(summaries > 0)
        #expect(log.summary.samples == total && log.summary.max == 9.99)
    }
}
