/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: Linux capabilities. */
#include "caps.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "utils.h"

int moat_caps_last_cap(void)
{
	static int last = -1;
	char buf[16] = "";
	FILE *f;

	if (last >= 0)
		return last;
	f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	if (f != NULL) {
		if (fgets(buf, sizeof(buf), f) != NULL)
			last = atoi(buf);
		fclose(f);
	}
	if (last <= 0)
		last = CAP_LAST_CAP;
	return last;
}

int moat_caps_parse(char *const *names, size_t n, const char *field, uint64_t *ret_mask,
		    moat_error *err)
{
	uint64_t mask = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		_cleanup_free_ char *full = NULL;
		cap_value_t v;
		const char *name = names[i];

		if (strncasecmp(name, "CAP_", 4) != 0)
			name = full = xasprintf("CAP_%s", names[i]);
		if (cap_from_name(name, &v) < 0 || v < 0 || v > 63)
			return moat_error_msg(err, EINVAL, "%s[%zu]: unknown capability '%s'",
					      field, i, names[i]);
		if (v > moat_caps_last_cap())
			return moat_error_msg(
				err, EINVAL,
				"%s[%zu]: capability '%s' is not supported by this kernel", field,
				i, names[i]);
		mask |= UINT64_C(1) << v;
	}
	*ret_mask = mask;
	return 0;
}

int moat_caps_keep(moat_error *err)
{
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return moat_error_set(err, errno, "prctl(PR_SET_KEEPCAPS)");
	return 0;
}

static int set_sets(uint64_t eff, uint64_t prm, uint64_t inh, moat_error *err)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {
		{ (uint32_t)eff, (uint32_t)prm, (uint32_t)inh },
		{ (uint32_t)(eff >> 32), (uint32_t)(prm >> 32), (uint32_t)(inh >> 32) },
	};

	if (capset(&hdr, data) < 0)
		return moat_error_set(err, errno, "capset");
	return 0;
}

int moat_caps_set(uint64_t effective, uint64_t permitted, uint64_t inheritable, moat_error *err)
{
	return set_sets(effective, permitted, inheritable, err);
}

static int permitted_now(uint64_t *ret, moat_error *err)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	if (capget(&hdr, data) < 0)
		return moat_error_set(err, errno, "capget");
	*ret = (uint64_t)data[0].permitted | ((uint64_t)data[1].permitted << 32);
	return 0;
}

int moat_caps_raise_effective(moat_error *err)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	if (capget(&hdr, data) < 0)
		return moat_error_set(err, errno, "capget");
	data[0].effective = data[0].permitted;
	data[1].effective = data[1].permitted;
	if (capset(&hdr, data) < 0)
		return moat_error_set(err, errno, "capset");
	return 0;
}

int moat_caps_apply(const struct moat_caps *caps, moat_error *err)
{
	int last = moat_caps_last_cap(), c;
	uint64_t prm = 0;

	/* The uid switch cleared the effective set; take back what is permitted
	 * so the bounding set can be shrunk (that needs CAP_SETPCAP). */
	if (permitted_now(&prm, err) < 0 || set_sets(prm, prm, 0, err) < 0)
		return moat_error_prefix(err, "capabilities");
	for (c = 0; c <= last; c++) {
		if (caps->bounding & (UINT64_C(1) << c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return moat_error_set(err, errno,
					      "capabilities: drop %s from the bounding set",
					      cap_to_name(c));
	}
	if (set_sets(caps->effective, caps->permitted, caps->inheritable, err) < 0)
		return moat_error_prefix(err, "capabilities: effective/permitted/inheritable");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return moat_error_set(err, errno, "capabilities: clear the ambient set");
	for (c = 0; c <= last; c++) {
		if (!(caps->ambient & (UINT64_C(1) << c)))
			continue;
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) < 0)
			return moat_error_set(err, errno,
					      "capabilities: raise ambient %s (it must also be "
					      "permitted and inheritable)",
					      cap_to_name(c));
	}
	return 0;
}

int moat_caps_drop_all(moat_error *err)
{
	struct moat_caps none = { 0 };

	return moat_caps_apply(&none, err);
}
