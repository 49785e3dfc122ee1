package reports

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// appendG writes what strconv writes with 'g' and a precision of 5
// (fmt's %.5g, which vgsvg writes): numbers of every magnitude and sign,
// on both sides of the powers of ten, halves and near-halves of the last
// digit, whole numbers, zeros, infinities and NaN.
func TestAppendGIsStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	xs := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1, -1, 0.5, 100, 12000, 99999, 99999.5,
		99999.49999, 9.99995, 9.99994999, 1.00005, 1.000050001, 0.00012345, 0.000123455, 123.455, 123.445, 2.5, 0.3, 72, 900, 2253, 1e-5}
	for e := -7; e <= 7; e++ {
		p := math.Pow(10, float64(e))
		for _, y := range []float64{p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)), p * 0.999995, p * 0.9999949, p * 9.99995} {
			xs = append(xs, y, -y)
		}
	}
	for range 2_000_000 {
		x := math.Pow(10, rng.Float64()*12-6)
		switch rng.IntN(4) {
		case 0:
			x = -x
		case 1: // a few digits and a half, as a coordinate in points may be
			x = (math.Round(x*1e3) + 0.5) / 1e3
		case 2:
			x = math.Round(x*100) / 100
		}
		xs = append(xs, x)
	}
	fast := 0
	for _, x := range xs {
		want := strconv.AppendFloat(nil, x, 'g', svgPrec, 64)
		if math.IsInf(x, 0) || math.IsNaN(x) {
			want = []byte(strconv.FormatFloat(x, 'g', svgPrec, 64))
			if math.IsInf(x, 1) {
				want = []byte("+Inf")
			}
		}
		if got := appendG([]byte("x"), x); string(got) != "x"+string(want) {
			t.Fatalf("appendG(%v) = %q, strconv %q", x, got[1:], want)
		}
		if _, ok := appendG5(nil, x); ok {
			fast++
		}
	}
	if fast < len(xs)/2 {
		t.Errorf("only %d of %d numbers written the fast way", fast, len(xs))
	}
}
