// SPDX-License-Identifier: MIT
/*
 * Signature probing and wiping with libblkid, the same library mkfs.ext4 and
 * wipefs use, so bfs sees exactly what they see.
 */
#include <bfs/probe.h>

#include <blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* "an ext4", "an xfs", "a udf", "a btrfs": by how the name is said */
static const char *article(const char *type)
{
	static const char *const an[] = { "xfs", "ntfs", "hfs", "f2fs", "LVM", "nilfs", "nss",
					  "mpool", "sysv", "swsuspend", "iso" };
	static const char *const a[] = { "ufs", "udf", "ubi", "uni" };
	size_t i;

	for (i = 0; i < sizeof(a) / sizeof(a[0]); i++)
		if (!strncmp(type, a[i], strlen(a[i])))
			return "a";
	for (i = 0; i < sizeof(an) / sizeof(an[0]); i++)
		if (!strncmp(type, an[i], strlen(an[i])))
			return "an";
	return strchr("aeiouAEIOU", type[0]) && type[0] ? "an" : "a";
}

static void describe(blkid_probe pr, char *desc, size_t len)
{
	const char *type = NULL, *label = NULL, *pttype = NULL, *usage = NULL;

	blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
	blkid_probe_lookup_value(pr, "LABEL", &label, NULL);
	blkid_probe_lookup_value(pr, "PTTYPE", &pttype, NULL);
	blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
	if (type && label)
		snprintf(desc, len, "%s %s %s labelled '%s'", article(type), type,
			 usage && !strcmp(usage, "raid") ? "RAID member" : "filesystem", label);
	else if (type)
		snprintf(desc, len, "%s %s %s", article(type), type,
			 usage && !strcmp(usage, "raid") ? "RAID member" :
			 usage && !strcmp(usage, "other") ? "signature" : "filesystem");
	else if (pttype)
		snprintf(desc, len, "%s %s partition table", article(pttype), pttype);
	else
		snprintf(desc, len, "an unknown signature");
}

int bfs_probe_signature(const char *path, char *desc, size_t len)
{
	blkid_probe pr;
	int rc;

	pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return errno ? -errno : -EIO;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_LABEL |
					  BLKID_SUBLKS_USAGE);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	rc = blkid_do_safeprobe(pr);
	if (rc == 0) {
		describe(pr, desc, len);
		rc = 1;
	} else if (rc == 1) {
		rc = 0;
	} else if (rc == -2) {
		snprintf(desc, len, "several conflicting signatures");
		rc = 1;
	} else {
		rc = -EIO;
	}
	blkid_free_probe(pr);
	return rc;
}

int bfs_wipe_signatures(const char *path)
{
	blkid_probe pr;
	int fd, ret = 0;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	pr = blkid_new_probe();
	if (!pr || blkid_probe_set_device(pr, fd, 0, 0)) {
		ret = -ENOMEM;
		goto out;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_MAGIC | BLKID_SUBLKS_BADCSUM);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC | BLKID_PARTS_FORCE_GPT);
	while (blkid_do_probe(pr) == 0) {
		if (blkid_do_wipe(pr, 0)) {
			ret = -EIO;
			break;
		}
	}
	if (!ret && fsync(fd))
		ret = -errno;
out:
	if (pr)
		blkid_free_probe(pr);
	close(fd);
	return ret;
}
