"""The parts of the world generator, one mixin per story: people, catalogue, commerce, support, chatter."""
