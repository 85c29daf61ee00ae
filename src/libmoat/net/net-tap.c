/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: taps, the host's end of a microVM's virtio-net interface. */
#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>

#include "net-internal.h"
#include "utils.h"

int moat_net_tap_open(const char *name, int *ret_fd, int *ret_index, moat_error *err)
{
	_cleanup_close_ int fd = -1;
	struct ifreq ifr;
	int e;

	e = net_name_check("tap", name, err);
	if (e < 0)
		return e;
	if (strchr(name, '%') != NULL)
		return moat_error_msg(err, EINVAL, "tap '%s': a name without a %% pattern", name);
	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "%s: open /dev/net/tun", name);
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, strlen(name));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		return moat_error_set(err, errno, "%s: create tap", name);
	e = moat_net_link_index(name, ret_index, err);
	if (e < 0)
		return e;
	*ret_fd = TAKE_FD(fd);
	return 0;
}
