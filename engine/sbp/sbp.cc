// placeholder: implemented by the session building sbp
