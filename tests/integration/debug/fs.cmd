# filesystem commands on an image the test filled with bfs debug -w
ls /
ls -l /a
cd /a
pwd
cd b
pwd
cd ../..
pwd
stat /a/hello.txt
stat <1>
cat /a/hello.txt
extents /a/b/numbers.txt
xattrs /a/hello.txt
keys inodes
