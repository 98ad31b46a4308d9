#ifndef SHARE_SRTP_CRYPTO_H
#define SHARE_SRTP_CRYPTO_H

/// Installs share's AES counter-mode cipher (AES-128/192/256 ICM) and
/// HMAC-SHA1 authenticator into libsrtp2's crypto kernel, replacing the
/// library's built-in ones. libsrtp2 keeps doing SRTP itself (key derivation,
/// packet index and replay, packet layout); only the primitives change.
///
/// Why: Debian builds libsrtp2 on NSS, which creates a fresh PKCS#11 context
/// for every packet (about 115 allocations per srtp_protect). These run on
/// OpenSSL's libcrypto with every context made once per session: no
/// allocation per packet.
///
/// Call after srtp_init(). Each type passes libsrtp2's own known-answer test
/// before it replaces the built-in one. Returns 0 (srtp_err_status_ok) or the
/// first libsrtp2 error status.
int share_srtp_install_crypto(void);

#endif
