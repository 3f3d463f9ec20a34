module github.com/dterei/gotsc

go 1.26
