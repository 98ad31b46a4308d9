#ifndef SHARE_SRTP_VERIFY_H
#define SHARE_SRTP_VERIFY_H

#include <stdint.h>

/// Checks whether an SRTP or SRTCP packet's authentication tag is genuine,
/// without libsrtp2's replay database.
///
/// Why: libsrtp2 checks a packet's index against its replay window before it
/// checks the tag, so a forged packet that only looks old is reported as a
/// replay. The receiver asks this verifier about those packets (and only
/// those) so that it counts forgeries as authentication failures and real
/// repeats as replays. It derives its own session keys from the master key
/// (RFC 3711 §4.3) and never decrypts into the caller's buffer.
typedef struct share_srtp_verifier share_srtp_verifier;

enum {
    SHARE_SRTP_VERIFY_AES_CM_HMAC_SHA1_80 = 1,
    SHARE_SRTP_VERIFY_AES_CM_HMAC_SHA1_32 = 2,
    SHARE_SRTP_VERIFY_AEAD_AES_128_GCM = 3,
    SHARE_SRTP_VERIFY_AES_256_CM_HMAC_SHA1_80 = 4,
    SHARE_SRTP_VERIFY_AES_256_CM_HMAC_SHA1_32 = 5,
    SHARE_SRTP_VERIFY_AEAD_AES_256_GCM = 6,
};

/// A verifier for one master key and salt (16 + 14 bytes, 32 + 14 for the
/// AES-256 profiles; a 12-byte salt for GCM), or NULL for a wrong length or
/// profile.
share_srtp_verifier *share_srtp_verifier_new(int profile, const uint8_t *master, int master_length);
void share_srtp_verifier_free(share_srtp_verifier *verifier);

/// 1 when the SRTP packet's tag is genuine for rollover counter `roc`.
int share_srtp_verify_rtp(const share_srtp_verifier *verifier, const uint8_t *packet, int length, uint32_t roc);

/// The first rollover counter in `first`...`last` under which the SRTP
/// packet's tag is genuine, or -1. With an HMAC profile the packet is hashed
/// once and only the counter is hashed per candidate (one HMAC state,
/// copied), so a search costs about one packet's hash plus a small constant
/// per candidate, whatever the packet's size. GCM puts the counter in the
/// IV: each candidate is a whole verification.
int64_t share_srtp_search_rtp_roc(const share_srtp_verifier *verifier, const uint8_t *packet, int length, uint32_t first,
                                  uint32_t last);

/// 1 when the SRTCP packet's tag is genuine.
int share_srtp_verify_rtcp(const share_srtp_verifier *verifier, const uint8_t *packet, int length);

#endif
