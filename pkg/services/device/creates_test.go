package device

import "testing"

func TestSentCreatesRemembersUntilForgotten(t *testing.T) {
	c := NewSentCreates()
	if c.has("a") {
		t.Fatal("an empty SentCreates remembers a create")
	}
	c.add("a")
	if !c.has("a") || c.has("b") {
		t.Fatal("SentCreates does not remember exactly the machine it was told of")
	}
	c.forget("a")
	if c.has("a") {
		t.Fatal("SentCreates remembers a forgotten create")
	}
	var none *SentCreates // a reconciler without one: nothing remembered, nothing panics
	none.add("a")
	none.forget("a")
	if none.has("a") {
		t.Fatal("a nil SentCreates remembers a create")
	}
}
