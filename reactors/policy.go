package reactors

// Design is a reference design as every platform knows it: its name and
// the configurations it refuses. A design's package implements it on a
// type of its own, named Design too (lt.Design), which on Linux is also
// its Policy; the registry (package reactors/designs) lists one value per
// design. One word throughout: a design is a Design, its name a
// DesignName.
type Design interface {
	// Name is the design's name, as designs.Parse reads it and Stats reports it.
	Name() DesignName
	// Check reports the configurations the design does not take (beyond
	// what Config.Validate refuses for every design), as an error wrapping
	// ErrConfig that names the field by its reactorlab serve flag name; nil
	// when it takes cfg. It opens nothing.
	Check(cfg Config) error
}
