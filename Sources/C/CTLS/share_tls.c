#include "share_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct share_tls {
    SSL_CTX *context;
    SSL *connection;
};

/// OpenSSL's queued reason, or `fallback` when it has none.
static void explain(const char *what, const char *fallback, char *error, size_t size) {
    unsigned long code = ERR_get_error();
    char reason[256] = {0};
    if (code != 0) {
        ERR_error_string_n(code, reason, sizeof reason);
    } else {
        snprintf(reason, sizeof reason, "%s", fallback);
    }
    ERR_clear_error();
    snprintf(error, size, "%s: %s", what, reason);
}

static int is_address(const char *host) {
    unsigned char bytes[16];
    return inet_pton(AF_INET, host, bytes) == 1 || inet_pton(AF_INET6, host, bytes) == 1;
}

share_tls *share_tls_open(int fd, const char *host, int trust, const char *ca_file, char *error, size_t error_size) {
    ERR_clear_error();
    share_tls *tls = calloc(1, sizeof *tls);
    if (tls == NULL) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    tls->context = SSL_CTX_new(TLS_client_method());
    if (tls->context == NULL) {
        explain("TLS set-up", "no context", error, error_size);
        share_tls_free(tls);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(tls->context, TLS1_2_VERSION);
    // A server that closes without close_notify (Connection: close) is not an
    // error here: the HTTP parser checks the body's length itself.
    SSL_CTX_set_options(tls->context, SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (trust == SHARE_TLS_TRUST_NONE) {
        SSL_CTX_set_verify(tls->context, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(tls->context, SSL_VERIFY_PEER, NULL);
        int loaded = trust == SHARE_TLS_TRUST_FILE ? SSL_CTX_load_verify_locations(tls->context, ca_file, NULL)
                                                   : SSL_CTX_set_default_verify_paths(tls->context);
        if (loaded != 1) {
            explain(trust == SHARE_TLS_TRUST_FILE ? "cannot read the CA file" : "cannot read the system's trust store",
                    "no certificates", error, error_size);
            share_tls_free(tls);
            return NULL;
        }
    }
    tls->connection = SSL_new(tls->context);
    if (tls->connection == NULL || SSL_set_fd(tls->connection, fd) != 1) {
        explain("TLS set-up", "no connection", error, error_size);
        share_tls_free(tls);
        return NULL;
    }
    X509_VERIFY_PARAM *param = SSL_get0_param(tls->connection);
    if (is_address(host)) {
        // An address is matched against the certificate's IP entries; no SNI.
        if (X509_VERIFY_PARAM_set1_ip_asc(param, host) != 1) {
            explain("TLS set-up", "bad address", error, error_size);
            share_tls_free(tls);
            return NULL;
        }
    } else {
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (SSL_set1_host(tls->connection, host) != 1 || SSL_set_tlsext_host_name(tls->connection, host) != 1) {
            explain("TLS set-up", "bad host name", error, error_size);
            share_tls_free(tls);
            return NULL;
        }
    }
    SSL_set_connect_state(tls->connection);
    return tls;
}

/// Maps an SSL_* result to WANT_READ/WANT_WRITE/0 (closed) or ERROR with why.
static long outcome(share_tls *tls, int result, const char *what, char *error, size_t error_size) {
    int kind = SSL_get_error(tls->connection, result);
    switch (kind) {
    case SSL_ERROR_WANT_READ:
        return SHARE_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE:
        return SHARE_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        if (ERR_peek_error() == 0) {
            snprintf(error, error_size, "%s: %s", what, errno != 0 ? strerror(errno) : "the server closed the connection");
            return SHARE_TLS_ERROR;
        }
        break;
    default:
        break;
    }
    long verified = SSL_get_verify_result(tls->connection);
    if (verified != X509_V_OK) {
        ERR_clear_error();
        snprintf(error, error_size, "the server's certificate is not accepted: %s", X509_verify_cert_error_string(verified));
        return SHARE_TLS_ERROR;
    }
    explain(what, "failed", error, error_size);
    return SHARE_TLS_ERROR;
}

int share_tls_handshake(share_tls *tls, char *error, size_t error_size) {
    ERR_clear_error();
    errno = 0;
    int result = SSL_do_handshake(tls->connection);
    if (result == 1) return 0;
    long status = outcome(tls, result, "TLS handshake", error, error_size);
    if (status == 0) {
        snprintf(error, error_size, "TLS handshake: the server closed the connection (is it an https port?)");
        return SHARE_TLS_ERROR;
    }
    return (int)status;
}

long share_tls_read(share_tls *tls, void *buffer, size_t size, char *error, size_t error_size) {
    ERR_clear_error();
    errno = 0;
    size_t count = 0;
    if (SSL_read_ex(tls->connection, buffer, size, &count) == 1) return (long)count;
    return outcome(tls, 0, "TLS read", error, error_size);
}

long share_tls_write(share_tls *tls, const void *bytes, size_t size, char *error, size_t error_size) {
    ERR_clear_error();
    errno = 0;
    size_t count = 0;
    if (SSL_write_ex(tls->connection, bytes, size, &count) == 1) return (long)count;
    long status = outcome(tls, 0, "TLS write", error, error_size);
    if (status == 0) {
        snprintf(error, error_size, "TLS write: the server closed the connection");
        return SHARE_TLS_ERROR;
    }
    return status;
}

void share_tls_free(share_tls *tls) {
    if (tls == NULL) return;
    if (tls->connection != NULL) SSL_free(tls->connection);
    if (tls->context != NULL) SSL_CTX_free(tls->context);
    free(tls);
}
