package redact

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// Every scheme a target or a host accepts, with its secret in the user
// information and in the query: the secret goes, everything else stays.
func TestTextMasksEverySchemeSecret(t *testing.T) {
	cases := []struct{ in, want string }{
		// user information
		{"redis://:S3cret@127.0.0.1:6379/0", "redis://:xxxxx@127.0.0.1:6379/0"},
		{"rediss://default:S3cret@h:6380/0", "rediss://default:xxxxx@h:6380/0"},
		{"redis-cluster://:S3cret@h:7000,h:7001", "redis-cluster://:xxxxx@h:7000,h:7001"},
		{"postgres://u:S3cret@h:5432/db", "postgres://u:xxxxx@h:5432/db"},
		{"postgresql://u:S3cret@h/db", "postgresql://u:xxxxx@h/db"},
		{"mysql://bench:p%40ss@127.0.0.1:3306/db", "mysql://bench:xxxxx@127.0.0.1:3306/db"},
		{"cassandra://u:S3cret@h1:9042,h2:9042/ks", "cassandra://u:xxxxx@h1:9042,h2:9042/ks"},
		{"mongodb://u:S3cret@h1,h2/db?replicaSet=rs", "mongodb://u:xxxxx@h1,h2/db?replicaSet=rs"},
		{"mongodb+srv://u:S3cret@cluster.example.com/db", "mongodb+srv://u:xxxxx@cluster.example.com/db"},
		{"memcached://u:S3cret@h:11211", "memcached://u:xxxxx@h:11211"},
		{"aerospike://u:S3cret@h:3000/test", "aerospike://u:xxxxx@h:3000/test"},
		{"http://u:S3cret@h:8080/page", "http://u:xxxxx@h:8080/page"},
		{"https://u:S3cret@h/page", "https://u:xxxxx@h/page"},
		{"kafka://u:S3cret@h:9092", "kafka://u:xxxxx@h:9092"},
		{"ssh://bench:S3cret@h:22", "ssh://bench:xxxxx@h:22"},
		// a lone user information where the scheme takes it for a
		// password (issue 33, 12): the whole of it
		{"redis://S3cret@127.0.0.1:1/0", "redis://xxxxx@127.0.0.1:1/0"},
		{"REDISS://S3cret@h:6380", "REDISS://xxxxx@h:6380"},
		{"redis-cluster://S3cret@h:7000,h:7001", "redis-cluster://xxxxx@h:7000,h:7001"},
		{"memcached://S3cret@h:11211", "memcached://xxxxx@h:11211"},
		{"targets: [redis://S3@cr?et#x@h:1/0, lmdb]", "targets: [redis://xxxxx@h:1/0, lmdb]"},
		{"redis at redis://S3cret@127.0.0.1:1/0: dial tcp 127.0.0.1:1: connect: connection refused",
			"redis at redis://xxxxx@127.0.0.1:1/0: dial tcp 127.0.0.1:1: connect: connection refused"},
		// the query
		{"postgres://u@127.0.0.1:5432/db?sslmode=disable&password=S3cret", "postgres://u@127.0.0.1:5432/db?sslmode=disable&password=xxxxx"},
		{"postgresql://h/db?password=S3cret&sslpassword=K3y&application_name=x", "postgresql://h/db?password=xxxxx&sslpassword=xxxxx&application_name=x"},
		{"redis://h:6379/0?password=S3cret&protocol=3", "redis://h:6379/0?password=xxxxx&protocol=3"},
		{"rediss://h:6380?auth=S3cret", "rediss://h:6380?auth=xxxxx"},
		{"redis-cluster://h:7000,h:7001?pass=S3cret", "redis-cluster://h:7000,h:7001?pass=xxxxx"},
		{"mysql://u@h/db?tls=true&pwd=S3cret", "mysql://u@h/db?tls=true&pwd=xxxxx"},
		{"cassandra://h:9042/ks?username=u&password=S3cret", "cassandra://h:9042/ks?username=u&password=xxxxx"},
		{"mongodb://h/db?authSource=admin&authMechanism=PLAIN&authMechanismProperties=AWS_SESSION_TOKEN:S3cret",
			"mongodb://h/db?authSource=admin&authMechanism=PLAIN&authMechanismProperties=xxxxx"},
		{"mongodb+srv://c.example.com/db?tlsCertificateKeyFile=/k.pem&tlsCertificateKeyFilePassword=S3cret",
			"mongodb+srv://c.example.com/db?tlsCertificateKeyFile=/k.pem&tlsCertificateKeyFilePassword=xxxxx"},
		{"memcached://h:11211?token=S3cret", "memcached://h:11211?token=xxxxx"},
		{"aerospike://h:3000/test?secret=S3cret", "aerospike://h:3000/test?secret=xxxxx"},
		{"http://h/page?api_key=S3cret&x=1#frag", "http://h/page?api_key=xxxxx&x=1#frag"},
		{"https://h/page?access_token=S3cret", "https://h/page?access_token=xxxxx"},
		{"kafka://h:9092?sasl_password=S3cret", "kafka://h:9092?sasl_password=xxxxx"},
		{"postgres://h/db?sslkey=/etc/k.pem&sslcert=/etc/c.pem&sslpassword=S3cret", "postgres://h/db?sslkey=/etc/k.pem&sslcert=/etc/c.pem&sslpassword=xxxxx"},
		{"postgres://h/db?pass%77ord=S3cret", "postgres://h/db?pass%77ord=xxxxx"},
		{"postgres://h/db?PASSWORD=S3c%26ret;user=u", "postgres://h/db?PASSWORD=xxxxx;user=u"},
		// both, and a value holding what ends other parts of a URI
		{"postgres://u:S3cret@h/db?password=An@?/,x", "postgres://u:xxxxx@h/db?password=xxxxx"},
		{"redis://h:6379?password=S3@cret", "redis://h:xxxxx"},
		{"redis://:S3@cr?et@h:6379?auth=S3cret", "redis://:xxxxx@h:6379?auth=xxxxx"},
		// '@' in both without a path: either reading may be the right
		// one, so both are masked
		{"postgres://u:S3c@ret@h?password=S3@cret&sslmode=disable", "postgres://u:xxxxx&sslmode=disable"},
		// a Go MySQL DSN and a PostgreSQL conninfo, as drivers quote them
		{"postgres at postgres://u@h/db?password=S3cret: failed to connect (see postgres://h?token=S3cret).",
			"postgres at postgres://u@h/db?password=xxxxx: failed to connect (see postgres://h?token=xxxxx)."},
		{"dial bench:S3cret@tcp(127.0.0.1:3306)/db failed", "dial bench:xxxxx@tcp(127.0.0.1:3306)/db failed"},
		{"u:S3cret@unix(/tmp/my.sock)/db", "u:xxxxx@unix(/tmp/my.sock)/db"},
		{"host=h user=u password=S3cret dbname=db", "host=h user=u password=xxxxx dbname=db"},
		{"host=h password = 'S3 c\\'ret' dbname=db", "host=h password = 'xxxxx' dbname=db"},
		// Redis echoing AUTH's arguments, and HELLO's after AUTH
		{"ERR unknown command 'AUTH', with args beginning with: 'S3cret' ", "ERR unknown command 'AUTH', with args beginning with: 'xxxxx' "},
		{"ERR unknown command `auth`, with args beginning with: `u`, `S3cret`, ", "ERR unknown command `auth`, with args beginning with: `xxxxx`, `xxxxx`, "},
		{"ERR unknown command `HELLO`, with args beginning with: `3`, `AUTH`, `default`, `S3cret`, ",
			"ERR unknown command `HELLO`, with args beginning with: `3`, `AUTH`, `xxxxx`, `xxxxx`, "},
	}
	for _, c := range cases {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
		if strings.Contains(Text(c.in), "S3") || strings.Contains(Text(c.in), "p%40ss") {
			t.Errorf("Text(%q) leaks the secret", c.in)
		}
	}
}

// Texts that hold URIs and key=value pairs but no secret are unchanged.
func TestTextLeavesTheRestAlone(t *testing.T) {
	for _, s := range []string{
		"redis://127.0.0.1:6379/0", "postgres://u@h/db?sslmode=disable&application_name=sb",
		"mongodb://u@h/db?authSource=a@b&authMechanism=SCRAM-SHA-256", "not a uri",
		"storebench run ycsb --set ycsb.keys=1000 --set cassandra.tokens=16 --set tripcache.key_bytes=16",
		"cassandra://h/ks?keyspace=x&consistency=ONE", "http://h/x?page=2#key=3",
		"name: ledger\nparams: {payload: 100, passes: [1, 2]}",
		"HISTFAAAACx4nJNpmSzMwMDAzQABzFCaEUrLQ+kDUDqqVmsClN0LpXmgdDKUbmOzpwd==", "x+y/apwd==", "pwd==",
		"--set ledger.password_length=12 --set x.token_bytes=16 --set secret_sauce=1",
		"postgres://bob@h/db", "mongodb://bob@h/db", "cassandra://bob@h/ks", "mysql://root@h/db",
		"ERR unknown command 'FOO', with args beginning with: 'bar' ",
	} {
		if got := Text(s); got != s {
			t.Errorf("Text(%q) = %q: changed without a secret", s, got)
		}
	}
}

// A study's YAML keeps its shape: the masked value leaves the flow
// punctuation and quotes around it.
func TestTextInAStudy(t *testing.T) {
	cases := map[string]string{
		"targets: [pebble, postgres://u@h/db?password=S3cret]\n":                    "targets: [pebble, postgres://u@h/db?password=xxxxx]\n",
		"targets: [postgres://u@h/db?password=S3cret, lmdb]\n":                      "targets: [postgres://u@h/db?password=xxxxx, lmdb]\n",
		"  - {uri: 'redis://a:S3cret@h/0?auth=S3cret'} # me@x":                      "  - {uri: 'redis://a:xxxxx@h/0?auth=xxxxx'} # me@x",
		"targets:\n  - uri: \"mysql://bench:S3cret@h/db?pwd=S3cret\"":               "targets:\n  - uri: \"mysql://bench:xxxxx@h/db?pwd=xxxxx\"",
		"redis://:p@ss#w?rd,x@h:1/0":                                                "redis://:xxxxx@h:1/0",
		"--targets=pebble,redis://:s3cret@127.0.0.1:6379/0,postgres://u:p%40w@h/db": "--targets=pebble,redis://:xxxxx@127.0.0.1:6379/0,postgres://u:xxxxx@h/db",
	}
	for in, want := range cases {
		if got := Text(in); got != want {
			t.Errorf("Text(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

func TestArgs(t *testing.T) {
	cmd := []string{"storebench", "run", "ledger", "--targets", "pebble,postgres://u@h/db?password=S3cret,lmdb,redis://:Pw-1@h:1/0", "--ladder=10",
		"--set", "tripcache.kafka_uri=kafka://u:p,w@h1:9092,h2:9092"}
	got := strings.Join(Args(cmd), " ")
	if got != "storebench run ledger --targets pebble,postgres://u@h/db?password=xxxxx,lmdb,redis://:xxxxx@h:1/0 --ladder=10"+
		" --set tripcache.kafka_uri=kafka://u:xxxxx@h1:9092,h2:9092" {
		t.Errorf("Args = %q", got)
	}
	if cmd[4] != "pebble,postgres://u@h/db?password=S3cret,lmdb,redis://:Pw-1@h:1/0" {
		t.Errorf("Args changed its argument")
	}
}

// A driver's message that quotes the secret without its URI loses it,
// as written and percent-decoded.
func TestScrub(t *testing.T) {
	uri := "postgres://bench:p%40ssw0rd@h/db?sslmode=disable&password=q%26w-long"
	msg := Scrub(uri, "dial "+uri+": auth failed (using password p@ssw0rd) p%40ssw0rd q&w-long q%26w-long")
	for _, s := range []string{"p@ssw0rd", "p%40ssw0rd", "q&w-long", "q%26w-long"} {
		if strings.Contains(msg, s) {
			t.Errorf("%q left in %q", s, msg)
		}
	}
	if !strings.Contains(msg, "postgres://bench:xxxxx@h/db?sslmode=disable&password=xxxxx") {
		t.Errorf("URI not masked in %q", msg)
	}
	for _, u := range []string{"redis://127.0.0.1:6379/0", "postgres://u@h/db"} {
		if Scrub(u, "x "+u) != "x "+u {
			t.Errorf("%q changed without a secret", u)
		}
	}
}

// Scrub masks a password where the message shows it as one (a URI's
// user information, a DSN's password=, a Redis reply), never by
// replacing its text everywhere: a short or word-like password would
// mangle the message and tell itself by where the mask falls (issue 33,
// 11: "failed to xxxxx to ... xxxxxion refused", "oxxxxxening").
func TestScrubKeepsMessagesReadable(t *testing.T) {
	cases := []struct{ uri, msg, want string }{
		{"postgres://bob:connect@127.0.0.1:5432/db",
			"failed to connect to `user=bob database=db`: 127.0.0.1:5432 (127.0.0.1): dial error: dial tcp 127.0.0.1:5432: connect: connection refused (postgres://bob:connect@127.0.0.1:5432/db)",
			"failed to connect to `user=bob database=db`: 127.0.0.1:5432 (127.0.0.1): dial error: dial tcp 127.0.0.1:5432: connect: connection refused (postgres://bob:xxxxx@127.0.0.1:5432/db)"},
		{"postgres://u:p@h/db", "opening postgres://u:p@h/db: password authentication failed for user \"u\"",
			"opening postgres://u:xxxxx@h/db: password authentication failed for user \"u\""},
		{"host=h user=bob password=connect dbname=db", "failed to connect to host=h user=bob password=connect dbname=db: connection refused",
			"failed to connect to host=h user=bob password=xxxxx dbname=db: connection refused"},
		{"redis://:connect@h:6379/0", "ERR unknown command 'AUTH', with args beginning with: 'connect' ",
			"ERR unknown command 'AUTH', with args beginning with: 'xxxxx' "},
		{"redis://connect@h:6379/0", "dial redis://connect@h:6379/0: connect: connection refused",
			"dial redis://xxxxx@h:6379/0: connect: connection refused"},
		// long, but a word: left where it is not a password by structure
		{"postgres://bob:connection@h/db", "postgres://bob:connection@h/db: connection refused", "postgres://bob:xxxxx@h/db: connection refused"},
		// long and no word: masked even quoted bare, as a last resort
		{"postgres://bob:Kx9-long-secret@h/db", "auth failed (using password Kx9-long-secret)", "auth failed (using password xxxxx)"},
		{"postgres://storebench:0f3a9c1d2e4b5a6978877665544332211@h/db", "bad password 0f3a9c1d2e4b5a6978877665544332211", "bad password xxxxx"},
		// the same text as the user: the URI shows it anyway
		{"postgres://bob-12345:bob-12345@h/db", "role \"bob-12345\" does not exist", "role \"bob-12345\" does not exist"},
	}
	for _, c := range cases {
		if got := Scrub(c.uri, c.msg); got != c.want {
			t.Errorf("Scrub(%q, %q)\n = %q\nwant %q", c.uri, c.msg, got, c.want)
		}
	}
}

// Value masks every string of a nested value in place: fields, slices,
// maps (of strings and of structs), pointers.
func TestValue(t *testing.T) {
	type inner struct {
		URI   string
		Ports []int
	}
	type outer struct {
		Command  []string
		Settings map[string]string
		Servers  map[string]inner
		In       *inner
		Any      any
		private  string
	}
	pw := "postgres://u@h/db?password=S3cret"
	v := &outer{
		Command:  []string{"run", pw},
		Settings: map[string]string{"server": pw, "pool": "8"},
		Servers:  map[string]inner{"a": {URI: pw, Ports: []int{1}}},
		In:       &inner{URI: pw},
		Any:      &inner{URI: pw},
		private:  pw,
	}
	Value(v)
	masked := "postgres://u@h/db?password=xxxxx"
	want := &outer{
		Command:  []string{"run", masked},
		Settings: map[string]string{"server": masked, "pool": "8"},
		Servers:  map[string]inner{"a": {URI: masked, Ports: []int{1}}},
		In:       &inner{URI: masked},
		Any:      &inner{URI: masked},
		private:  pw,
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("Value:\n got %+v\nwant %+v", v, want)
	}
}

// Random passwords holding what ends other parts of a URI, in the user
// information and in the query of every scheme, never survive Text.
func TestTextRandomPasswords(t *testing.T) {
	schemes := []string{"redis", "rediss", "redis-cluster", "postgres", "postgresql", "mysql", "cassandra",
		"mongodb", "mongodb+srv", "memcached", "aerospike", "http", "https", "kafka", "ssh"}
	userChars := "abcXYZ019-._~!$&*+,;=:@?#"
	queryChars := "abcXYZ019-._~!$*+,:@/?"
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(chars string) string {
		b := []byte("Pw")
		for range 6 + rng.IntN(10) {
			b = append(b, chars[rng.IntN(len(chars))])
		}
		return string(b) + "Z"
	}
	for i := 0; i < 3000; i++ {
		sc := schemes[rng.IntN(len(schemes))]
		pu, pq := gen(userChars), gen(queryChars)
		paths := []string{"", "/db", "/0"}
		path := paths[rng.IntN(len(paths))]
		for _, uri := range []string{
			sc + "://user:" + pu + "@h1:1,h2:2" + path,
			sc + "://user:" + pu + "@h:1" + path + "?x=1&password=" + pq + "&y=2",
			sc + "://h:1" + path + "?password=" + pq,
			sc + "://h:1" + path + "?sslmode=disable&password=" + pq,
		} {
			for _, text := range []string{uri, "targets: [\"" + uri + "\", lmdb]", "- " + uri + "\n- lmdb", "failed: " + uri + ": refused"} {
				got := Text(text)
				if strings.Contains(got, pu) || strings.Contains(got, pq) {
					t.Fatalf("Text(%q) = %q", text, got)
				}
			}
		}
	}
}

// The schemes whose lone user information is a password, as the redis,
// redis-cluster and memcached targets declare them when they register
// (package target/servers's TestLoneUserSecretsAreDeclared checks that they do).
func init() { AddLoneSecretSchemes("redis", "rediss", "redis-cluster", "memcached") }

// A scheme no target declared keeps its lone user information: a user
// name, shown.
func TestLoneUserShownUnlessDeclared(t *testing.T) {
	if got := Text("postgres://bench@h:5432/db"); got != "postgres://bench@h:5432/db" {
		t.Errorf("a lone user of an undeclared scheme was masked: %s", got)
	}
}
