#ifndef SHARE_TLS_H
#define SHARE_TLS_H

#include <stddef.h>

/// A TLS client over a connected, non-blocking socket, on OpenSSL's libssl
/// (libcrypto is linked already for SRTP). The caller owns the socket and
/// waits on it: every call returns at once, asking to be called again when
/// the socket is readable or writable. Nothing here blocks or sleeps.
///
/// OpenSSL's verification, SNI and host checks are macros and flag
/// combinations that Swift cannot call directly; this keeps them in one place.
typedef struct share_tls share_tls;

/// Results besides a byte count.
enum {
    SHARE_TLS_ERROR = -1,
    SHARE_TLS_WANT_READ = -2,
    SHARE_TLS_WANT_WRITE = -3,
};

/// Where trust comes from.
enum {
    /// The system's store (OpenSSL's default paths: /etc/ssl/certs).
    SHARE_TLS_TRUST_SYSTEM = 0,
    /// Only the certificates in `ca_file` (PEM), for a private CA.
    SHARE_TLS_TRUST_FILE = 1,
    /// No verification at all (a lab, on loopback only; the caller enforces that).
    SHARE_TLS_TRUST_NONE = 2,
};

/// A client for `fd`, checking that the certificate names `host` (a DNS name,
/// sent as SNI too, or an IP address matched against the certificate's IP
/// entries). NULL on failure, with why in `error`.
share_tls *share_tls_open(int fd, const char *host, int trust, const char *ca_file, char *error, size_t error_size);

/// Advances the handshake: 0 when done, WANT_READ/WANT_WRITE, or ERROR with
/// why in `error` (a certificate that fails names the check that failed).
int share_tls_handshake(share_tls *tls, char *error, size_t error_size);

/// Plaintext bytes read (0: the server closed the connection), or a result above.
long share_tls_read(share_tls *tls, void *buffer, size_t size, char *error, size_t error_size);

/// Plaintext bytes taken, or a result above.
long share_tls_write(share_tls *tls, const void *bytes, size_t size, char *error, size_t error_size);

/// Frees everything (does not close the socket).
void share_tls_free(share_tls *tls);

#endif
