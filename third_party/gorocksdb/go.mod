module github.com/tecbot/gorocksdb

go 1.26

require github.com/linxGnu/grocksdb v1.7.15
