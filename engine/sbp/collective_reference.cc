// placeholder: implemented by the session building collective_reference
