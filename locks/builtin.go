package locks

// builtins lists every lock of this package, in the order of the catalogue.
func builtins() []Info {
	return []Info{
		tokenInfo,
		setNXEXInfo,
	}
}
