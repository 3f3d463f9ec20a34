package memcached

// Command sends one text-protocol command (the tests' client).
var Command = command
