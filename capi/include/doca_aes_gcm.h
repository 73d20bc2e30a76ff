/* doca-emu: AES-GCM keys, encrypt and decrypt tasks over buffers of local memory maps (the
 * whole doca_aes_gcm.h of DOCA 2.6 to 3.3, plus the 2.5 spelling ..._get_max_iv_length of the
 * IV capability). The cipher runs inside doca_pe_progress (RustCrypto aes-gcm, NIST SP
 * 800-38D), at most aes_gcm.bytes_per_pass bytes (1 MiB by default) per context per pass, a
 * task whole. Layout: the source holds aad_size bytes of AAD first; encrypt writes AAD,
 * ciphertext and a tag_size-byte tag, decrypt reads AAD, ciphertext and tag and writes AAD and
 * plaintext; the output lands after the destination's data, whose data length grows by it.
 * Ours where DOCA documents nothing: an IV shorter than 12 bytes is used as GCM defines any
 * IV but 96 bits (GHASH-derived pre-counter block, not zero padding); a tag mismatch fails
 * the decrypt task with DOCA_ERROR_IO_FAILED and writes nothing. doca_task_submit does not
 * validate (a bad task completes through the error callback with its status, fatal to the
 * context); doca_task_try_submit validates first (DOCA_ERROR_INVALID_VALUE). */
#ifndef DOCA_EMU_AES_GCM_H_
#define DOCA_EMU_AES_GCM_H_

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>

#include "doca_buf.h"
#include "doca_compat.h"
#include "doca_ctx.h"
#include "doca_dev.h"
#include "doca_error.h"
#include "doca_pe.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_aes_gcm;
struct doca_aes_gcm_key;
struct doca_aes_gcm_task_encrypt;
struct doca_aes_gcm_task_decrypt;

/* The same values as DOCA's: 16- and 32-byte keys. Any other value is refused with
 * DOCA_ERROR_NOT_SUPPORTED. */
enum doca_aes_gcm_key_type {
	DOCA_AES_GCM_KEY_128 = 1,
	DOCA_AES_GCM_KEY_256 = 2,
};

typedef void (*doca_aes_gcm_task_encrypt_completion_cb_t)(struct doca_aes_gcm_task_encrypt *task,
							  union doca_data task_user_data,
							  union doca_data ctx_user_data);
typedef void (*doca_aes_gcm_task_decrypt_completion_cb_t)(struct doca_aes_gcm_task_decrypt *task,
							  union doca_data task_user_data,
							  union doca_data ctx_user_data);

/* On any device (host or DPU); DOCA_ERROR_NOT_SUPPORTED when the topology takes both task
 * types away (cap aes_gcm.encrypt 0 and aes_gcm.decrypt 0). */
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_create(struct doca_dev *dev, struct doca_aes_gcm **aes_gcm);
/* Idle only (DOCA_ERROR_BAD_STATE otherwise). */
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_destroy(struct doca_aes_gcm *aes_gcm);
DOCA_EXPERIMENTAL struct doca_ctx *doca_aes_gcm_as_ctx(struct doca_aes_gcm *aes_gcm);
/* Encrypt and decrypt tasks of one context together (cap aes_gcm.max_num_tasks). */
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_get_max_num_tasks(struct doca_aes_gcm *aes_gcm,
								  uint32_t *max_num_tasks);

/* raw_key points at 16 (KEY_128) or 32 (KEY_256) bytes. Any context state. */
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_key_create(struct doca_aes_gcm *aes_gcm, const void *raw_key,
						       enum doca_aes_gcm_key_type raw_key_type,
						       struct doca_aes_gcm_key **key);
/* A task still naming the key afterwards fails with DOCA_ERROR_BAD_STATE. */
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_key_destroy(struct doca_aes_gcm_key *key);

/* Capabilities of the encrypt task: cap aes_gcm.* lines of the topology (see the book). */
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_encrypt_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_encrypt_get_max_iv_len(const struct doca_devinfo *devinfo,
									    uint32_t *max_iv_len);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_encrypt_is_tag_96_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_encrypt_is_tag_128_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_encrypt_is_key_type_supported(const struct doca_devinfo *devinfo,
										   enum doca_aes_gcm_key_type key_type);
/* The largest source, AAD included. */
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_encrypt_get_max_buf_size(const struct doca_devinfo *devinfo,
									      uint64_t *max_buffer_size);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_encrypt_get_max_list_buf_num_elem(const struct doca_devinfo *devinfo,
										       uint32_t *max_list_num_elem);

/* Callbacks and num_tasks tasks (1 or more). Idle only. */
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_task_encrypt_set_conf(struct doca_aes_gcm *aes_gcm,
								  doca_aes_gcm_task_encrypt_completion_cb_t task_completion_cb,
								  doca_aes_gcm_task_encrypt_completion_cb_t task_error_cb,
								  uint32_t num_tasks);
/* Running only. Buffers and key may be NULL (set before submission). iv_length 0..12 and
 * tag_size 12 or 16, else DOCA_ERROR_INVALID_VALUE; the IV is copied. */
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_task_encrypt_alloc_init(struct doca_aes_gcm *aes_gcm,
								    struct doca_buf const *src_buff,
								    struct doca_buf *dst_buff,
								    struct doca_aes_gcm_key *key, const uint8_t *iv,
								    uint32_t iv_length, uint32_t tag_size,
								    uint32_t aad_size, union doca_data user_data,
								    struct doca_aes_gcm_task_encrypt **task);
DOCA_EXPERIMENTAL struct doca_task *doca_aes_gcm_task_encrypt_as_task(struct doca_aes_gcm_task_encrypt *task);
/* The setters cannot refuse: what they set is checked when the task is submitted. */
DOCA_EXPERIMENTAL void doca_aes_gcm_task_encrypt_set_src(struct doca_aes_gcm_task_encrypt *task,
							  struct doca_buf const *src_buff);
DOCA_EXPERIMENTAL struct doca_buf const *doca_aes_gcm_task_encrypt_get_src(const struct doca_aes_gcm_task_encrypt *task);
DOCA_EXPERIMENTAL void doca_aes_gcm_task_encrypt_set_dst(struct doca_aes_gcm_task_encrypt *task,
							  struct doca_buf *dst_buff);
DOCA_EXPERIMENTAL struct doca_buf *doca_aes_gcm_task_encrypt_get_dst(const struct doca_aes_gcm_task_encrypt *task);
DOCA_EXPERIMENTAL void doca_aes_gcm_task_encrypt_set_key(struct doca_aes_gcm_task_encrypt *task,
							  struct doca_aes_gcm_key *key);
DOCA_EXPERIMENTAL struct doca_aes_gcm_key *doca_aes_gcm_task_encrypt_get_key(const struct doca_aes_gcm_task_encrypt *task);
DOCA_EXPERIMENTAL void doca_aes_gcm_task_encrypt_set_iv(struct doca_aes_gcm_task_encrypt *task, const uint8_t *iv,
							 uint32_t iv_length);
/* A copy held by the task's handle; NULL for an IV longer than 12 bytes. */
DOCA_EXPERIMENTAL const uint8_t *doca_aes_gcm_task_encrypt_get_iv(const struct doca_aes_gcm_task_encrypt *task,
								   uint32_t *iv_length);
DOCA_EXPERIMENTAL void doca_aes_gcm_task_encrypt_set_tag_size(struct doca_aes_gcm_task_encrypt *task, uint32_t tag_size);
DOCA_EXPERIMENTAL uint32_t doca_aes_gcm_task_encrypt_get_tag_size(const struct doca_aes_gcm_task_encrypt *task);
DOCA_EXPERIMENTAL void doca_aes_gcm_task_encrypt_set_aad_size(struct doca_aes_gcm_task_encrypt *task, uint32_t aad_size);
DOCA_EXPERIMENTAL uint32_t doca_aes_gcm_task_encrypt_get_aad_size(const struct doca_aes_gcm_task_encrypt *task);

/* The decrypt task: the same calls. Its source holds AAD, ciphertext and tag (the maximum
 * buffer size counts all three). */
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_decrypt_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_decrypt_get_max_iv_len(const struct doca_devinfo *devinfo,
									    uint32_t *max_iv_len);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_decrypt_is_tag_96_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_decrypt_is_tag_128_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_decrypt_is_key_type_supported(const struct doca_devinfo *devinfo,
										   enum doca_aes_gcm_key_type key_type);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_decrypt_get_max_buf_size(const struct doca_devinfo *devinfo,
									      uint64_t *max_buffer_size);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_decrypt_get_max_list_buf_num_elem(const struct doca_devinfo *devinfo,
										       uint32_t *max_list_num_elem);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_task_decrypt_set_conf(struct doca_aes_gcm *aes_gcm,
								  doca_aes_gcm_task_decrypt_completion_cb_t task_completion_cb,
								  doca_aes_gcm_task_decrypt_completion_cb_t task_error_cb,
								  uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_task_decrypt_alloc_init(struct doca_aes_gcm *aes_gcm,
								    struct doca_buf const *src_buff,
								    struct doca_buf *dst_buff,
								    struct doca_aes_gcm_key *key, const uint8_t *iv,
								    uint32_t iv_length, uint32_t tag_size,
								    uint32_t aad_size, union doca_data user_data,
								    struct doca_aes_gcm_task_decrypt **task);
DOCA_EXPERIMENTAL struct doca_task *doca_aes_gcm_task_decrypt_as_task(struct doca_aes_gcm_task_decrypt *task);
DOCA_EXPERIMENTAL void doca_aes_gcm_task_decrypt_set_src(struct doca_aes_gcm_task_decrypt *task,
							  struct doca_buf const *src_buff);
DOCA_EXPERIMENTAL struct doca_buf const *doca_aes_gcm_task_decrypt_get_src(const struct doca_aes_gcm_task_decrypt *task);
DOCA_EXPERIMENTAL void doca_aes_gcm_task_decrypt_set_dst(struct doca_aes_gcm_task_decrypt *task,
							  struct doca_buf *dst_buff);
DOCA_EXPERIMENTAL struct doca_buf *doca_aes_gcm_task_decrypt_get_dst(const struct doca_aes_gcm_task_decrypt *task);
DOCA_EXPERIMENTAL void doca_aes_gcm_task_decrypt_set_key(struct doca_aes_gcm_task_decrypt *task,
							  struct doca_aes_gcm_key *key);
DOCA_EXPERIMENTAL struct doca_aes_gcm_key *doca_aes_gcm_task_decrypt_get_key(const struct doca_aes_gcm_task_decrypt *task);
DOCA_EXPERIMENTAL void doca_aes_gcm_task_decrypt_set_iv(struct doca_aes_gcm_task_decrypt *task, const uint8_t *iv,
							 uint32_t iv_length);
DOCA_EXPERIMENTAL const uint8_t *doca_aes_gcm_task_decrypt_get_iv(const struct doca_aes_gcm_task_decrypt *task,
								   uint32_t *iv_length);
DOCA_EXPERIMENTAL void doca_aes_gcm_task_decrypt_set_tag_size(struct doca_aes_gcm_task_decrypt *task, uint32_t tag_size);
DOCA_EXPERIMENTAL uint32_t doca_aes_gcm_task_decrypt_get_tag_size(const struct doca_aes_gcm_task_decrypt *task);
DOCA_EXPERIMENTAL void doca_aes_gcm_task_decrypt_set_aad_size(struct doca_aes_gcm_task_decrypt *task, uint32_t aad_size);
DOCA_EXPERIMENTAL uint32_t doca_aes_gcm_task_decrypt_get_aad_size(const struct doca_aes_gcm_task_decrypt *task);

/* The DOCA 2.5 spelling of the IV capability (declared at every level: it collides with
 * nothing). */
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_encrypt_get_max_iv_length(const struct doca_devinfo *devinfo,
									       uint32_t *max_iv_length);
DOCA_EXPERIMENTAL doca_error_t doca_aes_gcm_cap_task_decrypt_get_max_iv_length(const struct doca_devinfo *devinfo,
									       uint32_t *max_iv_length);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DOCA_EMU_AES_GCM_H_ */
