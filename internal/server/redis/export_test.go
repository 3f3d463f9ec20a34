package redis

// Command sends one RESP command (the tests' client).
var Command = command
