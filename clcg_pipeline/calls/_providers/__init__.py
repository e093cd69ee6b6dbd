"""Provider adapters behind one interface (:class:`ModelAPI`); see ``_registry``."""
