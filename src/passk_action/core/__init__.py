"""The pure core: data in, data out. No IO, environment, clock or subprocess."""
