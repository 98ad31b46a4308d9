// The types the sender's public API names come from the stage modules
// below; an embedder imports ShareSender alone and has them all:
// PixelBuffer and PixelConverter (ShareColor), CaptureTime (ShareFrames) and
// the MonotonicTime it holds (ShareBase),
// SessionKeying, ConfirmationPolicy and the identity store (ShareHandshake),
// SRTPKeyingMaterial and SRTPProfile (ShareSRTP), MemoryBudget
// (ShareGovernor), LatencySummary (ShareLatency), CaptureSource (ShareCapture)
// and SessionDescription (ShareWire).
@_exported public import ShareBase
@_exported public import ShareColor
@_exported public import ShareFrames
@_exported public import ShareGovernor
@_exported public import ShareHandshake
@_exported public import ShareLatency
@_exported public import ShareSRTP
@_exported public import ShareWire
@_exported public import ShareCapture
