package suite

// strictSpecs catch limiters that are not an exact sliding window.
func strictSpecs() []spec {
	return nil
}
