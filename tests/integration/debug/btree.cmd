# btree commands on an image filled by bfs-mkkeys (100 cookie keys in the
# inodes btree at 1000000:3, 1000000:10, ... and 10 extents of inode 1000100)
help keys
btrees
keys inodes 1000000:0 1000000:30
keys inodes 1000000:680 max
keys extents 1000100:0 1000100:40
# extents: a position inside an extent finds that extent
find 1000100:5 extents
find 1000000:10 inodes
node 2097152
bucket 5
bucket 16
bucket 32
