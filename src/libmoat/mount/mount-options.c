/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: mount options, one table row per option name.
 *
 * Sources: mount(8), mount_setattr(2) and the runtime-spec's list of Linux mount options.
 * Notes on rows that are not a plain flag:
 *   - atime family: the MOUNT_ATTR_* atime setting is a 3-bit mode, so every atime option sets
 *     the mode and clears the whole field. "atime", "norelatime" and "nostrictatime" mean "the
 *     kernel default", which is relatime.
 *   - sync, async, dirsync, mand, nomand, lazytime, nolazytime, iversion, noiversion are
 *     superblock flags: mount(2) takes them as MS_*; the new API takes them by name through
 *     fsconfig(FSCONFIG_SET_FLAG), where the VFS or the filesystem accepts or refuses them.
 *     They do not apply to bind mounts (a bind shares the superblock).
 *   - silent/loud only quiet the kernel log of mount(2); the new API reports errors through
 *     the fs context instead, so they are accepted and have no effect there.
 *   - ro is a per-mount attribute here: moat never makes a superblock read-only, because a
 *     superblock can be shared with the host (sysfs of a joined network namespace, a bind).
 *   - r-prefixed attributes (rro, rnosuid, ...; runtime-spec 1.1) apply to the whole subtree
 *     with mount_setattr(AT_RECURSIVE) and have no mount(2) form.
 *   - idmap/ridmap ask for an idmapped bind mount (mount_setattr MOUNT_ATTR_IDMAP) using
 *     mounts[].uidMappings/gidMappings or else the container's user namespace.
 *   - tmpcopyup (crun's extension): for a tmpfs, copy what the rootfs holds at the mount
 *     point into the new tmpfs, so mounting a tmpfs over /etc/foo keeps its files.
 *   - defaults is accepted and means nothing, as in mount(8).
 * Anything that is not a row is filesystem data and is passed on as written, whether or not it
 * looks like "key=value": the filesystem decides, and its error names the option.
 */
#include "mount-options.h"

#include <errno.h>
#include <string.h>
#include <sys/mount.h>

#include "strv.h"
#include "utils.h"

enum opt_kind {
	K_NOP,       /* accepted, no effect */
	K_FLAG,      /* per-mount flag: ms <-> attr */
	K_ATIME,     /* atime mode: ms <-> attr holds the mode value */
	K_SB,        /* superblock flag: ms <-> fsconfig flag "name" */
	K_REC,       /* recursive per-mount attribute (mount_setattr AT_RECURSIVE) */
	K_REC_ATIME, /* recursive atime mode */
	K_PROP,      /* propagation type */
	K_BIND,      /* bind (rec: rbind) */
	K_REMOUNT,
	K_IDMAP, /* idmap (rec: ridmap) */
	K_TMPCOPYUP,
	K_SILENT,
};

struct opt_row {
	const char *name;
	enum opt_kind kind;
	bool clear;       /* the option clears the flag instead of setting it */
	bool rec;         /* the subtree form: rbind, rprivate, ridmap, ... */
	unsigned long ms; /* MS_* */
	uint64_t attr;    /* MOUNT_ATTR_* (or the atime mode) */
};

/* clang-format off */
#define FLAG(n, c, m, a) { n, K_FLAG, c, false, m, a }
#define ATIME(n, c, m, a) { n, K_ATIME, c, false, m, a }
#define SB(n, c, m) { n, K_SB, c, false, m, 0 }
#define REC(n, c, a) { n, K_REC, c, true, 0, a }
#define REC_ATIME(n, a) { n, K_REC_ATIME, false, true, 0, a }
#define PROP(n, r, m) { n, K_PROP, false, r, m, 0 }
#define KIND(n, k, r, m) { n, k, false, r, m, 0 }
/* clang-format on */

static const struct opt_row opt_table[] = {
	KIND("defaults", K_NOP, false, 0),
	FLAG("ro", false, MS_RDONLY, MOUNT_ATTR_RDONLY),
	FLAG("rw", true, MS_RDONLY, MOUNT_ATTR_RDONLY),
	FLAG("nosuid", false, MS_NOSUID, MOUNT_ATTR_NOSUID),
	FLAG("suid", true, MS_NOSUID, MOUNT_ATTR_NOSUID),
	FLAG("nodev", false, MS_NODEV, MOUNT_ATTR_NODEV),
	FLAG("dev", true, MS_NODEV, MOUNT_ATTR_NODEV),
	FLAG("noexec", false, MS_NOEXEC, MOUNT_ATTR_NOEXEC),
	FLAG("exec", true, MS_NOEXEC, MOUNT_ATTR_NOEXEC),
	FLAG("nosymfollow", false, MS_NOSYMFOLLOW, MOUNT_ATTR_NOSYMFOLLOW),
	FLAG("symfollow", true, MS_NOSYMFOLLOW, MOUNT_ATTR_NOSYMFOLLOW),
	FLAG("nodiratime", false, MS_NODIRATIME, MOUNT_ATTR_NODIRATIME),
	FLAG("diratime", true, MS_NODIRATIME, MOUNT_ATTR_NODIRATIME),
	ATIME("noatime", false, MS_NOATIME, MOUNT_ATTR_NOATIME),
	ATIME("atime", true, MS_NOATIME, MOUNT_ATTR_RELATIME),
	ATIME("relatime", false, MS_RELATIME, MOUNT_ATTR_RELATIME),
	ATIME("norelatime", true, MS_RELATIME, MOUNT_ATTR_RELATIME),
	ATIME("strictatime", false, MS_STRICTATIME, MOUNT_ATTR_STRICTATIME),
	ATIME("nostrictatime", true, MS_STRICTATIME, MOUNT_ATTR_RELATIME),
	SB("sync", false, MS_SYNCHRONOUS),
	SB("async", true, MS_SYNCHRONOUS),
	SB("dirsync", false, MS_DIRSYNC),
	SB("mand", false, MS_MANDLOCK),
	SB("nomand", true, MS_MANDLOCK),
	SB("lazytime", false, MS_LAZYTIME),
	SB("nolazytime", true, MS_LAZYTIME),
	SB("iversion", false, MS_I_VERSION),
	SB("noiversion", true, MS_I_VERSION),
	KIND("silent", K_SILENT, false, MS_SILENT),
	{ "loud", K_SILENT, true, false, MS_SILENT, 0 },
	KIND("remount", K_REMOUNT, false, MS_REMOUNT),
	KIND("bind", K_BIND, false, MS_BIND),
	KIND("rbind", K_BIND, true, MS_BIND | MS_REC),
	PROP("private", false, MS_PRIVATE),
	PROP("rprivate", true, MS_PRIVATE),
	PROP("shared", false, MS_SHARED),
	PROP("rshared", true, MS_SHARED),
	PROP("slave", false, MS_SLAVE),
	PROP("rslave", true, MS_SLAVE),
	PROP("unbindable", false, MS_UNBINDABLE),
	PROP("runbindable", true, MS_UNBINDABLE),
	REC("rro", false, MOUNT_ATTR_RDONLY),
	REC("rrw", true, MOUNT_ATTR_RDONLY),
	REC("rnosuid", false, MOUNT_ATTR_NOSUID),
	REC("rsuid", true, MOUNT_ATTR_NOSUID),
	REC("rnodev", false, MOUNT_ATTR_NODEV),
	REC("rdev", true, MOUNT_ATTR_NODEV),
	REC("rnoexec", false, MOUNT_ATTR_NOEXEC),
	REC("rexec", true, MOUNT_ATTR_NOEXEC),
	REC("rnosymfollow", false, MOUNT_ATTR_NOSYMFOLLOW),
	REC("rsymfollow", true, MOUNT_ATTR_NOSYMFOLLOW),
	REC("rnodiratime", false, MOUNT_ATTR_NODIRATIME),
	REC("rdiratime", true, MOUNT_ATTR_NODIRATIME),
	REC_ATIME("rnoatime", MOUNT_ATTR_NOATIME),
	REC_ATIME("ratime", MOUNT_ATTR_RELATIME),
	REC_ATIME("rrelatime", MOUNT_ATTR_RELATIME),
	REC_ATIME("rnorelatime", MOUNT_ATTR_RELATIME),
	REC_ATIME("rstrictatime", MOUNT_ATTR_STRICTATIME),
	REC_ATIME("rnostrictatime", MOUNT_ATTR_RELATIME),
	KIND("idmap", K_IDMAP, false, 0),
	KIND("ridmap", K_IDMAP, true, 0),
	KIND("tmpcopyup", K_TMPCOPYUP, false, 0),
};

static const struct opt_row *find_opt(const char *name)
{
	size_t i;

	for (i = 0; i < MOAT_ARRAY_SIZE(opt_table); i++)
		if (strcmp(opt_table[i].name, name) == 0)
			return &opt_table[i];
	return NULL;
}

bool moat_mount_opt_known(const char *name)
{
	return find_opt(name) != NULL;
}

const char *const *moat_mount_opt_names(void)
{
	static const char *names[MOAT_ARRAY_SIZE(opt_table) + 1];
	size_t i;

	if (names[0] == NULL)
		for (i = 0; i < MOAT_ARRAY_SIZE(opt_table); i++)
			names[i] = opt_table[i].name;
	return names;
}

static void set_bits(uint64_t *set, uint64_t *clr, uint64_t bits, bool clear)
{
	if (clear) {
		*set &= ~bits;
		*clr |= bits;
	} else {
		*set |= bits;
		*clr &= ~bits;
	}
}

static void set_atime(uint64_t *set, uint64_t *clr, uint64_t mode)
{
	*set = (*set & ~(uint64_t)MOUNT_ATTR__ATIME) | mode;
	*clr |= MOUNT_ATTR__ATIME;
}

static void set_ms(struct moat_mount_opts *o, unsigned long ms, bool clear)
{
	if (clear) {
		o->ms_set &= ~ms;
		o->ms_clear |= ms;
	} else {
		o->ms_set |= ms;
		o->ms_clear &= ~ms;
	}
}

static void apply_row(struct moat_mount_opts *o, const struct opt_row *r)
{
	switch (r->kind) {
	case K_NOP: break;
	case K_FLAG:
		set_ms(o, r->ms, r->clear);
		set_bits(&o->attr_set, &o->attr_clr, r->attr, r->clear);
		break;
	case K_ATIME:
		set_ms(o, r->ms, r->clear);
		set_atime(&o->attr_set, &o->attr_clr, r->attr);
		break;
	case K_SB:
		set_ms(o, r->ms, r->clear);
		strv_push(&o->sb_flags, &o->sb_flags_len, r->name);
		break;
	case K_REC: set_bits(&o->rec_attr_set, &o->rec_attr_clr, r->attr, r->clear); break;
	case K_REC_ATIME: set_atime(&o->rec_attr_set, &o->rec_attr_clr, r->attr); break;
	case K_PROP:
		o->propagation = r->ms;
		o->propagation_rec = r->rec;
		break;
	case K_BIND:
		o->is_bind = true;
		o->is_recursive = o->is_recursive || r->rec;
		break;
	case K_REMOUNT: o->remount = true; break;
	case K_IDMAP:
		o->idmap = true;
		o->idmap_recursive = o->idmap_recursive || r->rec;
		break;
	case K_TMPCOPYUP: o->tmpcopyup = true; break;
	case K_SILENT: o->silent = !r->clear; break;
	}
}

char *moat_mount_data_join(char *const *data, size_t n)
{
	size_t len = 0, i;
	char *s, *p;

	if (n == 0)
		return NULL;
	for (i = 0; i < n; i++)
		len += strlen(data[i]) + 1;
	s = p = xmalloc(len);
	for (i = 0; i < n; i++) {
		size_t l = strlen(data[i]);

		memcpy(p, data[i], l);
		p += l;
		*p++ = (i + 1 < n) ? ',' : '\0';
	}
	return s;
}

int moat_mount_opts_parse(char *const *opts, size_t n, struct moat_mount_opts *ret, moat_error *err)
{
	struct moat_mount_opts o = { 0 };
	size_t i;

	for (i = 0; i < n; i++) {
		const struct opt_row *r;

		if (opts[i] == NULL || opts[i][0] == '\0') {
			moat_mount_opts_release(&o);
			return moat_error_msg(err, EINVAL, "options[%zu]: empty option", i);
		}
		r = find_opt(opts[i]);
		if (r != NULL)
			apply_row(&o, r);
		else
			strv_push(&o.data, &o.data_len, opts[i]);
	}
	o.data_str = moat_mount_data_join(o.data, o.data_len);
	*ret = o;
	return 0;
}

void moat_mount_opts_release(struct moat_mount_opts *o)
{
	strv_free(o->sb_flags);
	strv_free(o->data);
	free(o->data_str);
	memset(o, 0, sizeof(*o));
}

static bool key_matches(const char *opt, const char *key)
{
	size_t kl = strlen(key);

	return strncmp(opt, key, kl) == 0 && (opt[kl] == '\0' || opt[kl] == '=');
}

size_t moat_mount_opts_drop_data(struct moat_mount_opts *o, const char *key)
{
	size_t i, j = 0, dropped = 0;

	for (i = 0; i < o->data_len; i++) {
		if (key_matches(o->data[i], key)) {
			free(o->data[i]);
			dropped++;
			continue;
		}
		o->data[j++] = o->data[i];
	}
	if (dropped == 0)
		return 0;
	o->data_len = j;
	o->data[j] = NULL;
	free(o->data_str);
	o->data_str = moat_mount_data_join(o->data, o->data_len);
	return dropped;
}

void moat_mount_opts_add_data(struct moat_mount_opts *o, const char *opt)
{
	strv_push(&o->data, &o->data_len, opt);
	free(o->data_str);
	o->data_str = moat_mount_data_join(o->data, o->data_len);
}

const char *moat_mount_opts_get_data(const struct moat_mount_opts *o, const char *key)
{
	size_t i, kl = strlen(key);

	for (i = 0; i < o->data_len; i++)
		if (key_matches(o->data[i], key))
			return o->data[i][kl] == '=' ? o->data[i] + kl + 1 : "";
	return NULL;
}
