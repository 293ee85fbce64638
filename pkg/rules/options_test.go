package rules

import "testing"

// TestEveryOptionHasItsOwnField checks the map from option names to
// RuleSet fields: each option turns on exactly one field, and the bits
// round-trip.
func TestEveryOptionHasItsOwnField(t *testing.T) {
	for i, name := range ruleOptions {
		t.Run(name, func(t *testing.T) {
			var off RuleSet
			if off.option(i) == nil {
				t.Fatalf("option %d (%s) has no field", i, name)
			}
			on := withOptionBits(off, 1<<i)
			if got := optionBits(on); got != 1<<i {
				t.Errorf("optionBits after turning on %s = %b, want %b", name, got, 1<<i)
			}
			*on.option(i) = false
			if on != off {
				t.Errorf("turning %s on changed more than its own field: %+v", name, on)
			}
		})
	}
}
