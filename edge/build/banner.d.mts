/** The bundle's banner (see banner.mjs): CommonJS source that defines `__lintelFileUrl`. */
export declare const BANNER: string;
