"""The processes a walk talks to and how: the pool, the bubblewrap jail, the protocol (the one
seam between judge and sandbox), shared GPU buffers and the device lock."""
