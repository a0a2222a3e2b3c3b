# an image whose last keys are only in the journal (bfs-mkkeys --unclean):
# read-only, the journal is replayed in memory
super
journal
journal 2
keys inodes 1000000:300 1000000:400
