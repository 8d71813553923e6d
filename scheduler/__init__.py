"""The pure scheduling core: pool state + queue + limits + time in, decisions out. No Django, no clock, no I/O."""
