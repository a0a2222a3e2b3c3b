// SPDX-License-Identifier: MIT
/*
 * The filesystem identity in the KEY=VALUE form udev's IMPORT{program} and
 * `blkid -o udev` use (bfs show-super --export).  libblkid does not know
 * bcowfs, so this is how /dev/disk/by-uuid, by-label, mount UUID=... and
 * fsck -A find a bcowfs block device.  The two encodings follow libblkid's
 * so that the links look exactly as they would for ext4:
 *   ID_FS_LABEL      whitespace runs become '_', leading/trailing ones go,
 *                    bytes that are not valid UTF-8 become '_' (what
 *                    `blkid -o udev` prints; it keeps control characters);
 *   ID_FS_LABEL_ENC  every byte outside [0-9A-Za-z#+-.:=@_] and not part of
 *                    a valid UTF-8 sequence becomes \xNN (blkid_encode_string),
 *                    which udev decodes back into the link name.
 */
#include "cmd.h"
#include "export.h"

#include <bfs/super.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* length of the valid multi-byte UTF-8 sequence at @s, or 0 */
static size_t utf8_len(const unsigned char *s)
{
	size_t n, i;
	unsigned c = s[0];

	if (c < 0xc2 || c > 0xf4)
		return 0;
	n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* overlong 3- and 4-byte forms, surrogates, beyond U+10FFFF */
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) ||
	    (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

static bool plain(unsigned char c)
{
	return isascii(c) && (isalnum(c) || strchr("#+-.:=@_", c));
}

void bfs_export_encode(const char *s, char *out, size_t size)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	while (*p && o + 5 < size) {
		size_t n = utf8_len(p);

		if (n) {
			memcpy(out + o, p, n);
			o += n;
			p += n;
		} else if (plain(*p)) {
			out[o++] = (char)*p++;
		} else {
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", *p++);
		}
	}
	out[o] = 0;
}

void bfs_export_safe(const char *s, char *out, size_t size)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;
	bool gap = false;

	while (*p && isspace(*p))
		p++;
	while (*p && o + 5 < size) {
		size_t n = utf8_len(p);

		if (isspace(*p)) {
			gap = true;
			p++;
			continue;
		}
		if (gap)
			out[o++] = '_';
		gap = false;
		if (n) {
			memcpy(out + o, p, n);
			o += n;
			p += n;
		} else if (*p >= 0x80) {
			out[o++] = '_';
			p++;
		} else {
			out[o++] = (char)*p++;
		}
	}
	out[o] = 0;
}

void bfs_export_print(FILE *f, const struct bfs_sb *sb)
{
	char uuid[37], label[BFS_LABEL_SIZE + 1], buf[BFS_LABEL_SIZE * 4 + 1];
	size_t n;

	bfs_format_uuid(sb->uuid, uuid);
	bfs_sb_label(sb, label);
	/* libblkid drops trailing whitespace from every label it reports */
	for (n = strlen(label); n && isspace((unsigned char)label[n - 1]); n--)
		label[n - 1] = 0;
	fprintf(f, "ID_FS_UUID=%s\nID_FS_UUID_ENC=%s\n", uuid, uuid);
	fprintf(f, "ID_FS_VERSION=%u\n", le16_to_cpu(sb->version));
	fprintf(f, "ID_FS_TYPE=%s\nID_FS_USAGE=filesystem\n", BFS_FS_TYPE);
	if (label[0]) {
		bfs_export_safe(label, buf, sizeof(buf));
		fprintf(f, "ID_FS_LABEL=%s\n", buf);
		bfs_export_encode(label, buf, sizeof(buf));
		fprintf(f, "ID_FS_LABEL_ENC=%s\n", buf);
	}
}
