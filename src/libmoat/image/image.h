/* SPDX-License-Identifier: GPL-2.0-or-later */
/* moat: a container image made into a root filesystem directory, for `moat sandbox --image`.
 *
 * Unpack the image at path into cache_dir and return (malloc'd) the directory holding its root
 * filesystem. path is one of:
 *   - an OCI image layout directory (oci-layout, index.json, blobs/sha256/...);
 *   - an OCI archive: a tar of such a layout, as `podman save --format oci-archive` and
 *     `skopeo copy ... oci-archive:` write;
 *   - a Docker archive, as `docker save` and `podman save` (by default) write: manifest.json
 *     naming a Config and its Layers, the layer tars beside it; when it also holds an OCI
 *     layout (Docker 25 and later write both) the layout is used.
 * Archives may be gzip-compressed; layers may be tar, tar+gzip, and tar+zstd when libarchive
 * was built with libzstd. No external program is ever run to decompress.
 *
 * Multi-platform indexes: the manifest for linux and the host's architecture (amd64 on
 * x86-64) is used; when there is none the error names the platforms the index holds. An
 * image whose config names another architecture or OS is refused too.
 *
 * The cache is content-addressed (every directory made 0700: a root holds the image's setuid
 * files, which no other user of the host should reach):
 *   cache_dir/layers/sha256/<digest>/diff/           one layer's files, as its tar has them
 *                                                    (whiteouts included), unpacked once
 *   cache_dir/layers/sha256/<digest>/implicit-dirs   the directories the tar never named
 *                                                    (made for an entry's parents), NUL-ended
 *   cache_dir/rootfs/sha256/<digest>/                the merged root: the layers in order, a
 *                                                    ".wh.<name>" entry deleting <name> of the
 *                                                    layers below, ".wh..wh..opq" making its
 *                                                    directory opaque (the layers below
 *                                                    emptied from it)
 *   cache_dir/tmp/                                   work in progress
 * A layer is named by its blob digest (OCI) or its diff_id (Docker: the digest of the
 * uncompressed tar), and checked against it as it is unpacked: an OCI blob always (and its
 * size), a Docker layer against the config's rootfs.diff_ids, manifests and configs against
 * their descriptors (a Docker config against its file name when that is a digest). A root is
 * named by the manifest's digest (OCI) or the config's (Docker). Everything is built under a
 * temporary name in tmp/ and renamed into place, so an unpack that runs concurrently or is
 * killed never leaves half a layer or half a root visible (what a killed one left in tmp/ is
 * removed by the next call, which can tell it from live work by a lock); a second call with
 * the same image returns the cached root without unpacking anything again (an archive's
 * small files are read to learn its digest, nothing larger). The files of a root are hard
 * links to the layers' (copies where a link cannot be made): a root is shared by every
 * caller and must not be written to; mount it read-only or put an overlay over it.
 *
 * Entries are kept inside the root:
 *   - absolute names are made relative ("/etc/x" is "etc/x"); a name with a ".." component
 *     is refused;
 *   - a name that would pass through a symlink, planted by an earlier entry of the layer or
 *     by a lower layer, is refused (a directory entry that replaces a lower layer's symlink
 *     replaces it, as in overlayfs: only names under a directory the layer never named are
 *     refused);
 *   - a hard link must name an entry of its own layer, inside the root, that is not a
 *     directory, reached without a symlink;
 *   - device nodes and sockets are skipped: an unprivileged container cannot use them, and a
 *     root is no place for a node of the host's devices; FIFOs are kept;
 *   - modes are kept, setuid and setgid bits included, and owners (numeric ids; names are
 *     ignored) when the caller may set them: as root, or as root of a user namespace that maps
 *     them; otherwise files belong to the caller and one warning says so;
 *   - extended attributes (file capabilities, SELinux labels) are not applied.
 * Refusals fail the whole call with an error naming the layer ("layers[1] sha256:<digest>")
 * and the entry. Nothing is ever written outside cache_dir.
 *
 * Returns 0 and *ret_rootfs ("cache_dir/rootfs/sha256/<digest>"), or -errno with err set to
 * a message that begins "image '<path>'" and names the file, field or entry; warnings are
 * added to err either way. */
#ifndef MOAT_IMAGE_H
#define MOAT_IMAGE_H

#include "error.h"

int moat_image_rootfs(const char *path, const char *cache_dir, char **ret_rootfs, moat_error *err);

#endif
