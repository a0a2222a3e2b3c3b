# every command here fails: the transcript shows the messages, the exit status is 1
nosuchcommand
keys
keys nosuchbtree
keys inodes 1
find 1000000:11 inodes
node 12345
bucket 999999
stat /nonexistent
cat /
ls /a/hello.txt
journal 99999
mkdir /c
set-super label x
corrupt 0 0
help nosuchcommand
"unterminated
# a command that works after the errors
pwd
