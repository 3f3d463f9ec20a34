package redis

// Command sends one RESP command, after AUTH when password is set (the
// tests' client).
var Command = command
