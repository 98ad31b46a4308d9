// The types the receiver's public API names come from the stage modules
// below; an embedder imports ShareReceiver alone and has them all:
// SessionKeying, ConfirmationPolicy and the identity store (ShareHandshake),
// SRTPKeyingMaterial and SRTPProfile (ShareSRTP), LatencySummary
// (ShareLatency), and the decoded picture's planes (ShareColor).
@_exported public import ShareColor
@_exported public import ShareHandshake
@_exported public import ShareLatency
@_exported public import ShareSRTP
