/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: the guest's RNG made unique to this VM (docs/microvm-snapshot.md).
 *
 * A guest restored from a snapshot resumes with the RNG state it was saved with, the same in
 * every restore. START carries 32 bytes of the host's randomness; they are mixed into the
 * input pool as credited entropy (RNDADDENTROPY), and the CRNG is rekeyed from it at once
 * (RNDRESEEDCRNG) rather than at its next scheduled reseed, before the workload or anything
 * else reads a random byte. The boot id, made on its first read, is never read before then.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "agent.h"
#include "utils.h"

int agent_reseed(const uint8_t *seed, size_t len, moat_error *err)
{
	_Alignas(struct rand_pool_info)
		uint8_t in[sizeof(struct rand_pool_info) + MOAT_PROTO_SEED_SIZE];
	struct rand_pool_info *info = (struct rand_pool_info *)in;
	_cleanup_close_ int fd = -1;

	if (len != MOAT_PROTO_SEED_SIZE)
		return moat_error_msg(err, EINVAL, "the seed has %zu bytes, not %d", len,
				      MOAT_PROTO_SEED_SIZE);
	info->entropy_count = (int)len * 8;
	info->buf_size = (int)len;
	memcpy(info->buf, seed, len);
	fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "open /dev/urandom");
	if (ioctl(fd, RNDADDENTROPY, info) < 0)
		return moat_error_set(err, errno, "RNDADDENTROPY");
	if (ioctl(fd, RNDRESEEDCRNG) < 0)
		return moat_error_set(err, errno, "RNDRESEEDCRNG");
	explicit_bzero(&in, sizeof(in));
	return 0;
}
