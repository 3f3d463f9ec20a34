package ycsb

import "math"

// zipfian draws ranks in [0, n) with P(rank) ∝ 1/(rank+1)^theta, by the
// method of Gray et al. ("Quickly generating billion-record synthetic
// databases"), as YCSB's ZipfianGenerator does. The zeta constant costs
// O(n) once; drawing is O(1) and the generator is read-only afterwards, so
// every load goroutine shares one.
type zipfian struct {
	n                        float64
	theta, alpha, zetan, eta float64
	halfPowTheta             float64
}

const zipfianTheta = 0.99 // YCSB's default skew

func newZipfian(n int64) *zipfian {
	z := &zipfian{n: float64(n), theta: zipfianTheta}
	var zeta2 float64
	for i := int64(1); i <= n; i++ {
		z.zetan += 1 / math.Pow(float64(i), z.theta)
		if i == 2 {
			zeta2 = z.zetan
		}
	}
	if n < 2 {
		zeta2 = z.zetan
	}
	z.alpha = 1 / (1 - z.theta)
	z.eta = (1 - math.Pow(2/z.n, 1-z.theta)) / (1 - zeta2/z.zetan)
	z.halfPowTheta = 1 + math.Pow(0.5, z.theta)
	return z
}

// rank maps a uniform u in [0,1) to a zipfian rank in [0, n).
func (z *zipfian) rank(u float64) int64 {
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < z.halfPowTheta {
		return 1
	}
	r := int64(z.n * math.Pow(z.eta*u-z.eta+1, z.alpha))
	if r >= int64(z.n) {
		r = int64(z.n) - 1
	}
	return r
}

// uniform01 turns 64 random bits into a float in [0, 1).
func uniform01(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// fnv64 scatters an index, as YCSB's "hashed" insert order and its
// scrambled zipfian do, so popular keys are spread over the key space.
func fnv64(v uint64) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= 0x100000001b3
		v >>= 8
	}
	return h
}
