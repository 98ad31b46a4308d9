#ifndef SHARE_CSRTP_SHIM_H
#define SHARE_CSRTP_SHIM_H
#include <srtp2/srtp.h>

/// SRTP_MAX_TRAILER_LEN is a macro built from other macros; Swift imports only
/// simple literal macros, so the packet-buffer tailroom is exposed as a constant.
static inline int share_srtp_max_trailer_len(void) { return SRTP_MAX_TRAILER_LEN; }

/// srtp_ssrc_type_t's values are enumerators of an anonymous-field struct
/// union; setting them from Swift through the nested struct is clumsy, so the
/// policy's SSRC selector is set here.
static inline void share_srtp_policy_set_ssrc_any(srtp_policy_t *policy, int inbound) {
    policy->ssrc.type = inbound ? ssrc_any_inbound : ssrc_any_outbound;
    policy->ssrc.value = 0;
}

/// The policy of one stream, the SSRC given (host order).
static inline void share_srtp_policy_set_ssrc(srtp_policy_t *policy, uint32_t ssrc) {
    policy->ssrc.type = ssrc_specific;
    policy->ssrc.value = ssrc;
}
#endif
