// SPDX-License-Identifier: BSD-2-Clause
/* The host's uuid: random, kept in a file when the operator names one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "seacache/host_uuid.h"

#define UUID_HEX (2 * CSI_HOST_UUID_SIZE)

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int uuid_parse(const char *s, uint8_t uuid[CSI_HOST_UUID_SIZE])
{
	for (unsigned int i = 0; i < CSI_HOST_UUID_SIZE; i++) {
		int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		uuid[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* The uuid kept in file: 0, -ENOENT, or another negative errno (err set). */
static int uuid_read(const char *file, uint8_t uuid[CSI_HOST_UUID_SIZE],
		     char *err, size_t errlen)
{
	char text[UUID_HEX + 3];
	ssize_t n;
	int fd = open(file, O_RDONLY | O_CLOEXEC), e;

	if (fd < 0) {
		e = errno;
		if (e != ENOENT)
			snprintf(err, errlen, "cannot read the host uuid file %s: %s",
				 file, strerror(e));
		return -e;
	}
	n = read(fd, text, sizeof(text) - 1);
	e = errno;
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "cannot read the host uuid file %s: %s",
			 file, strerror(e));
		return -e;
	}
	if ((n != UUID_HEX && (n != UUID_HEX + 1 || text[UUID_HEX] != '\n')) ||
	    uuid_parse(text, uuid)) {
		snprintf(err, errlen, "%s does not hold a host uuid (32 hex digits and a newline): remove it to make a new one",
			 file);
		return -EINVAL;
	}
	return 0;
}

/* A new random uuid kept in file, which must not exist (-EEXIST). */
static int uuid_create(const char *file, const uint8_t uuid[CSI_HOST_UUID_SIZE],
		       char *err, size_t errlen)
{
	char text[UUID_HEX + 1];
	int fd, e = 0;

	for (unsigned int i = 0; i < CSI_HOST_UUID_SIZE; i++)
		snprintf(text + 2 * i, 3, "%02x", uuid[i]);
	text[UUID_HEX] = '\n';
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		e = errno;
	else if (write(fd, text, sizeof(text)) != (ssize_t)sizeof(text) ||
		 fsync(fd))
		e = errno ? errno : EIO;
	if (fd >= 0)
		close(fd);
	if (e == EEXIST)
		return -e;
	if (e) {
		if (fd >= 0)
			unlink(file);
		snprintf(err, errlen, "cannot write the host uuid file %s: %s",
			 file, strerror(e));
		return -e;
	}
	return 0;
}

int host_uuid(const char *file, uint8_t uuid[CSI_HOST_UUID_SIZE], char *err,
	      size_t errlen)
{
	int rc;

	if (file) {
		rc = uuid_read(file, uuid, err, errlen);
		if (rc != -ENOENT)
			return rc;
	}
	if (getrandom(uuid, CSI_HOST_UUID_SIZE, 0) != CSI_HOST_UUID_SIZE) {
		snprintf(err, errlen, "no random bytes for a host uuid: %s",
			 strerror(errno));
		return -EIO;
	}
	if (!file)
		return 0;
	rc = uuid_create(file, uuid, err, errlen);
	/* another process of this host made it first: that one is ours */
	if (rc == -EEXIST)
		rc = uuid_read(file, uuid, err, errlen);
	return rc;
}
