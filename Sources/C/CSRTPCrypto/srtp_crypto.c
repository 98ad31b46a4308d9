// AES-ICM and HMAC-SHA1 for libsrtp2 on OpenSSL's libcrypto, without
// per-packet allocation. See include/share_srtp_crypto.h.
//
// RFC 3711 §4.1.1 (AES counter mode): the keystream for a packet is AES of
// (salt << 16) XOR (packet IV), counting in the low 16 bits. libsrtp2 hands
// us the IV; OpenSSL's CTR mode counts in all 128 bits, which is the same
// for any packet shorter than 2^16 blocks (1 MiB) since the low 16 bits of
// the start counter are zero.
// RFC 2104 (HMAC): inner and outer SHA-1 states are absorbed once per key;
// each packet copies them (plain structs) instead of rehashing the pads.

#define OPENSSL_SUPPRESS_DEPRECATED 1  // SHA1_Init/Update/Final: the stack-only SHA-1 API
#include "share_srtp_crypto.h"

#include <srtp2/auth.h>
#include <srtp2/cipher.h>
#include <srtp2/srtp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

// libsrtp2's own known-answer vectors, run against ours at registration.
extern const srtp_cipher_test_case_t srtp_aes_icm_128_test_case_0;
extern const srtp_cipher_test_case_t srtp_aes_icm_256_test_case_0;
extern const srtp_auth_test_case_t srtp_hmac_test_case_0;

// MARK: AES-ICM

typedef struct {
    EVP_CIPHER_CTX *ctx;
    int key_size;               // 16, 24 or 32
    uint8_t salt[16];           // the 14-byte salt, low two bytes zero
} share_icm_state;

static srtp_err_status_t icm_alloc(srtp_cipher_t **cipher, int key_len, int tag_len,
                                   const srtp_cipher_type_t *type, int algorithm);
static srtp_err_status_t icm_dealloc(srtp_cipher_t *cipher);

static srtp_err_status_t icm_init(void *state, const uint8_t *key) {
    share_icm_state *icm = state;
    const EVP_CIPHER *evp = icm->key_size == 16 ? EVP_aes_128_ctr()
                          : icm->key_size == 24 ? EVP_aes_192_ctr() : EVP_aes_256_ctr();
    memset(icm->salt, 0, sizeof icm->salt);
    memcpy(icm->salt, key + icm->key_size, SRTP_SALT_LEN);
    if (EVP_CIPHER_CTX_reset(icm->ctx) != 1 || EVP_EncryptInit_ex(icm->ctx, evp, NULL, key, NULL) != 1) {
        return srtp_err_status_init_fail;
    }
    return srtp_err_status_ok;
}

static srtp_err_status_t icm_set_iv(void *state, uint8_t *iv, srtp_cipher_direction_t direction) {
    (void)direction;  // counter mode: the same operation both ways
    share_icm_state *icm = state;
    uint8_t counter[16];
    for (int i = 0; i < 16; i++) counter[i] = icm->salt[i] ^ iv[i];
    return EVP_EncryptInit_ex(icm->ctx, NULL, NULL, NULL, counter) == 1 ? srtp_err_status_ok
                                                                        : srtp_err_status_cipher_fail;
}

static srtp_err_status_t icm_crypt(void *state, uint8_t *buffer, unsigned int *length) {
    share_icm_state *icm = state;
    int out = 0;
    if (*length > (1u << 20) || EVP_EncryptUpdate(icm->ctx, buffer, &out, buffer, (int)*length) != 1) {
        return srtp_err_status_cipher_fail;
    }
    *length = (unsigned int)out;
    return srtp_err_status_ok;
}

#define SHARE_ICM_TYPE(name, bits, keylen, test, algorithm_id)                                      \
    static srtp_err_status_t name##_alloc(srtp_cipher_t **cipher, int key_len, int tag_len);       \
    static const srtp_cipher_type_t name = {                                                         \
        name##_alloc, icm_dealloc, icm_init, NULL, icm_crypt, icm_crypt, icm_set_iv, NULL,           \
        "AES-" #bits " integer counter mode (share, OpenSSL)", test, algorithm_id};                  \
    static srtp_err_status_t name##_alloc(srtp_cipher_t **cipher, int key_len, int tag_len) {      \
        if (key_len != (keylen)) return srtp_err_status_bad_param;                                   \
        return icm_alloc(cipher, key_len, tag_len, &name, algorithm_id);                             \
    }

SHARE_ICM_TYPE(share_icm_128, 128, SRTP_AES_ICM_128_KEY_LEN_WSALT, &srtp_aes_icm_128_test_case_0, SRTP_AES_ICM_128)
SHARE_ICM_TYPE(share_icm_256, 256, SRTP_AES_ICM_256_KEY_LEN_WSALT, &srtp_aes_icm_256_test_case_0, SRTP_AES_ICM_256)

static srtp_err_status_t icm_alloc(srtp_cipher_t **cipher, int key_len, int tag_len,
                                   const srtp_cipher_type_t *type, int algorithm) {
    (void)tag_len;
    srtp_cipher_t *made = calloc(1, sizeof *made);
    share_icm_state *icm = calloc(1, sizeof *icm);
    if (made == NULL || icm == NULL || (icm->ctx = EVP_CIPHER_CTX_new()) == NULL) {
        free(made);
        free(icm);
        return srtp_err_status_alloc_fail;
    }
    icm->key_size = key_len - SRTP_SALT_LEN;
    made->type = type;
    made->state = icm;
    made->key_len = key_len;
    made->algorithm = algorithm;
    *cipher = made;
    return srtp_err_status_ok;
}

static srtp_err_status_t icm_dealloc(srtp_cipher_t *cipher) {
    share_icm_state *icm = cipher->state;
    EVP_CIPHER_CTX_free(icm->ctx);
    memset(icm, 0, sizeof *icm);
    free(icm);
    memset(cipher, 0, sizeof *cipher);
    free(cipher);
    return srtp_err_status_ok;
}

// MARK: HMAC-SHA1

typedef struct {
    SHA_CTX inner;    // after absorbing key XOR ipad
    SHA_CTX outer;    // after absorbing key XOR opad
    SHA_CTX running;  // the packet being authenticated
} share_hmac_state;

static const srtp_auth_type_t share_hmac;

static srtp_err_status_t hmac_alloc(srtp_auth_t **auth, int key_len, int out_len) {
    if (key_len < 0 || key_len > SHA_CBLOCK || out_len < 0 || out_len > SHA_DIGEST_LENGTH) {
        return srtp_err_status_bad_param;
    }
    srtp_auth_t *made = calloc(1, sizeof *made);
    share_hmac_state *hmac = calloc(1, sizeof *hmac);
    if (made == NULL || hmac == NULL) {
        free(made);
        free(hmac);
        return srtp_err_status_alloc_fail;
    }
    made->type = &share_hmac;
    made->state = hmac;
    made->out_len = out_len;
    made->key_len = key_len;
    made->prefix_len = 0;
    *auth = made;
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_dealloc(srtp_auth_t *auth) {
    memset(auth->state, 0, sizeof(share_hmac_state));
    free(auth->state);
    memset(auth, 0, sizeof *auth);
    free(auth);
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_init(void *state, const uint8_t *key, int key_len) {
    share_hmac_state *hmac = state;
    if (key_len < 0 || key_len > SHA_CBLOCK) return srtp_err_status_bad_param;
    uint8_t pad[SHA_CBLOCK];
    for (int i = 0; i < SHA_CBLOCK; i++) pad[i] = (uint8_t)((i < key_len ? key[i] : 0) ^ 0x36);
    SHA1_Init(&hmac->inner);
    SHA1_Update(&hmac->inner, pad, sizeof pad);
    for (int i = 0; i < SHA_CBLOCK; i++) pad[i] ^= 0x36 ^ 0x5c;
    SHA1_Init(&hmac->outer);
    SHA1_Update(&hmac->outer, pad, sizeof pad);
    memset(pad, 0, sizeof pad);
    hmac->running = hmac->inner;
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_start(void *state) {
    share_hmac_state *hmac = state;
    hmac->running = hmac->inner;
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_update(void *state, const uint8_t *message, int length) {
    share_hmac_state *hmac = state;
    if (length < 0) return srtp_err_status_bad_param;
    SHA1_Update(&hmac->running, message, (size_t)length);
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_compute(void *state, const uint8_t *message, int length, int tag_len,
                                      uint8_t *result) {
    share_hmac_state *hmac = state;
    if (length < 0 || tag_len < 0 || tag_len > SHA_DIGEST_LENGTH) return srtp_err_status_bad_param;
    uint8_t digest[SHA_DIGEST_LENGTH];
    SHA1_Update(&hmac->running, message, (size_t)length);
    SHA1_Final(digest, &hmac->running);
    SHA_CTX outer = hmac->outer;
    SHA1_Update(&outer, digest, sizeof digest);
    SHA1_Final(digest, &outer);
    memcpy(result, digest, (size_t)tag_len);
    hmac->running = hmac->inner;  // ready for the next packet even without start()
    return srtp_err_status_ok;
}

static const srtp_auth_type_t share_hmac = {
    hmac_alloc, hmac_dealloc, hmac_init, hmac_compute, hmac_update, hmac_start,
    "HMAC-SHA1 (share, OpenSSL)", &srtp_hmac_test_case_0, SRTP_HMAC_SHA1};

int share_srtp_install_crypto(void) {
    srtp_err_status_t status = srtp_replace_cipher_type(&share_icm_128, SRTP_AES_ICM_128);
    if (status == srtp_err_status_ok) status = srtp_replace_cipher_type(&share_icm_256, SRTP_AES_ICM_256);
    if (status == srtp_err_status_ok) status = srtp_replace_auth_type(&share_hmac, SRTP_HMAC_SHA1);
    return (int)status;
}
