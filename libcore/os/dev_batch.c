// SPDX-License-Identifier: MIT
/*
 * bfs_dev_submit(): a batch of reads and writes in flight together.
 *
 * The batch goes to the submitting thread's io_uring (uring.c) when there
 * is more than one transfer to make on a file or block device; memory
 * devices, devices with held ranges (whose copies live in memory) and
 * kernels or sandboxes without io_uring take the synchronous path, the same
 * one bfs_dev_read() and bfs_dev_write() take.  Either way failure injection
 * counts each write once, before it is issued, and the recorder logs each
 * write after it completed, so a crash harness replaying the log sees what
 * a power cut could leave: any subset of a batch until the next flush.
 */
#include <bfs/log.h>

#include "dev_internal.h"

/* an entry that fails the checks of bfs_dev_read()/_write() gets its error and is left out */
static int batch_check(const struct bfs_dev *dev, struct bfs_dev_io *io)
{
	if (io->write && dev->readonly)
		return -EROFS;
	return bfs_dev_check_io(dev, io->off, io->buf, io->len) ?:
	       (io->write ? 0 : bfs_dev_fault_read(dev, io->off, io->len));
}

static int batch_first_error(const struct bfs_dev_io *io, unsigned nr)
{
	unsigned i;

	for (i = 0; i < nr; i++)
		if (io[i].ret)
			return io[i].ret;
	return 0;
}

static int batch_sync(struct bfs_dev *dev, struct bfs_dev_io *io, unsigned nr,
		      void (*work)(void *arg), void *arg)
{
	unsigned i;

	if (work)
		work(arg);

	for (i = 0; i < nr; i++)
		io[i].ret = io[i].write ?
			bfs_dev_do_write(dev, io[i].off, io[i].buf, io[i].len, false, !io[i].cached) :
			bfs_dev_do_read(dev, io[i].off, io[i].buf, io[i].len, !io[i].cached);
	return batch_first_error(io, nr);
}

struct batch {
	struct bfs_os_xfer *x;
	unsigned	*order;		/* indices of x[] in completion order */
	unsigned	*from;		/* x[k] carries io[from[k]] */
	u8		**bounce;	/* x[k]'s aligned copy, or NULL */
	unsigned	nr;
};

static void batch_free(struct batch *b)
{
	unsigned k;

	if (b->bounce)
		for (k = 0; k < b->nr; k++)
			bfs_free(b->bounce[k]);
	bfs_free(b->bounce);
	bfs_free(b->from);
	bfs_free(b->order);
	bfs_free(b->x);
}

/* the transfers of @io as io_uring will carry them; -ENOMEM */
static int batch_prepare(struct bfs_dev *dev, struct bfs_dev_io *io, unsigned nr, struct batch *b)
{
	unsigned i;

	*b = (struct batch){ 0 };
	b->x = bfs_calloc(nr, sizeof(*b->x));
	b->order = bfs_calloc(nr, sizeof(*b->order));
	b->from = bfs_calloc(nr, sizeof(*b->from));
	b->bounce = bfs_calloc(nr, sizeof(*b->bounce));
	if (!b->x || !b->order || !b->from || !b->bounce)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		struct bfs_os_xfer *x = &b->x[b->nr];
		void *buf = io[i].buf;
		bool bounce;
		int fd;

		io[i].ret = batch_check(dev, &io[i]);
		if (io[i].ret || !io[i].len)
			continue;
		if (io[i].write && (io[i].ret = bfs_dev_inject_write(dev)))
			continue;
		fd = bfs_dev_pick_fd(dev, io[i].off, buf, io[i].len, !io[i].cached, &bounce);
		if (bounce) {
			b->bounce[b->nr] = bfs_aligned_alloc(BFS_MAX(dev->sector_size, 4096U),
							     io[i].len);
			if (!b->bounce[b->nr]) {
				io[i].ret = -ENOMEM;
				continue;
			}
			buf = b->bounce[b->nr];
			if (io[i].write)
				memcpy(buf, io[i].buf, io[i].len);
		}
		*x = (struct bfs_os_xfer){
			.fd = fd, .write = io[i].write, .off = io[i].off, .buf = buf,
			.len = io[i].len,
		};
		b->from[b->nr++] = i;
	}
	return 0;
}

/* the result of x[k]: a refused first direct transfer is redone buffered */
static void batch_finish_one(struct bfs_dev *dev, struct batch *b, unsigned k,
			     struct bfs_dev_io *io)
{
	struct bfs_os_xfer *x = &b->x[k];
	int ret = x->ret;

	if (ret == -EINVAL && x->fd == dev->fd &&
	    (bfs_dev_direct_refused(dev, x->fd, ret) || !bfs_dev_is_direct(dev)))
		ret = bfs_dev_xfer(dev, io->off, io->buf, io->len, io->write, !io->cached);
	else if (!ret)
		bfs_dev_direct_worked(dev, x->fd);
	if (!ret && !io->write && b->bounce[k])
		memcpy(io->buf, b->bounce[k], io->len);
	io->ret = ret;
	if (!ret && io->write && bfs_dev_recording(dev))
		bfs_iolog_rec_io(dev, BFS_IOLOG_WRITE, io->off, io->buf, io->len);
}

static int batch_uring(struct bfs_dev *dev, struct bfs_dev_io *io, unsigned nr,
		       void (*work)(void *arg), void *arg)
{
	bool worked = false;
	struct batch b;
	unsigned k;
	int ret;

	ret = batch_prepare(dev, io, nr, &b);
	if (ret) {
		/* nothing was carried out: every entry says so, not just the call */
		for (k = 0; k < nr; k++)
			io[k].ret = ret;
		batch_free(&b);
		if (work)
			work(arg);
		return ret;
	}
	ret = bfs_os_uring_xfer(b.x, b.nr, b.order, work, arg, &worked);
	if (work && !worked)
		work(arg);
	if (ret) {
		/* no ring after all, or a broken one: the same transfers, one by one */
		for (k = 0; k < b.nr; k++) {
			struct bfs_dev_io *o = &io[b.from[k]];

			b.x[k].ret = bfs_dev_xfer(dev, o->off, o->buf, o->len, o->write, !o->cached);
			b.x[k].fd = -1;	/* not the first direct transfer any more */
			b.order[k] = k;
			if (b.bounce[k]) {
				/* already copied to the caller (reads) or from it (writes) */
				bfs_free(b.bounce[k]);
				b.bounce[k] = NULL;
			}
		}
	}
	for (k = 0; k < b.nr; k++)
		batch_finish_one(dev, &b, b.order[k], &io[b.from[b.order[k]]]);
	batch_free(&b);
	return batch_first_error(io, nr);
}

int bfs_dev_submit_during(struct bfs_dev *dev, struct bfs_dev_io *io, unsigned nr,
			  void (*work)(void *arg), void *arg)
{
	/* one transfer and no work to overlap with it: a plain pwrite is cheaper */
	if (!nr || (nr == 1 && !work) || dev->mem || dev->nr_held || !bfs_os_uring_available())
		return batch_sync(dev, io, nr, work, arg);
	return batch_uring(dev, io, nr, work, arg);
}

int bfs_dev_submit(struct bfs_dev *dev, struct bfs_dev_io *io, unsigned nr)
{
	return bfs_dev_submit_during(dev, io, nr, NULL, NULL);
}
